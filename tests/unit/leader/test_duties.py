"""The leader's duties run side by side and all end when leadership is lost."""

from __future__ import annotations

import threading

from app.leader.duties import side_by_side


def test_every_duty_runs_with_the_same_lost_event_and_the_whole_ends_when_all_have_returned() -> None:
    started: list[str] = []
    both_started = threading.Barrier(3)

    def duty(name: str) -> object:
        def run(lost: threading.Event) -> None:
            started.append(name)
            both_started.wait(timeout=10)
            lost.wait(timeout=30)

        return run

    lost = threading.Event()
    leader = threading.Thread(target=side_by_side([("a", duty("a")), ("b", duty("b"))]), args=(lost,))
    leader.start()
    both_started.wait(timeout=10)  # both run at once: neither waits for the other to return
    assert sorted(started) == ["a", "b"]
    assert leader.is_alive()
    lost.set()
    leader.join(timeout=10)
    assert not leader.is_alive()
