"""What the in-memory leadership alone does (the cases every leadership passes are the contract suite's,
tests/contract/test_leadership.py): alone, it leads as soon as it starts; a stop that comes while its duty
runs sets ``lost`` and the duty returns."""

from __future__ import annotations

import threading

from app.storage.memory.leadership import MemoryLeadership
from tests.api.helpers import eventually


def test_alone_it_leads_at_once_and_a_stop_ends_its_duty() -> None:
    ended = threading.Event()

    def duty(lost: threading.Event) -> None:
        lost.wait(60)
        ended.set()

    leadership = MemoryLeadership("kts-0", duty)
    leadership.start()
    eventually(lambda: leadership.is_leader)
    assert leadership.contenders() == ["kts-0"]

    leadership.stop()

    assert ended.is_set() and not leadership.is_leader
