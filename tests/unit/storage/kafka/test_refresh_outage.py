"""A cache refresh's outage logs one INFO line, one WARNING once it lasts, and one INFO line when it is over."""

from __future__ import annotations

import logging
import threading

import pytest

from app.domain.errors import StoreUnavailable
from app.storage.kafka.refresh_outage import RefreshOutage


def test_one_line_per_outage_at_the_level_it_deserves(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    outage = RefreshOutage("token cache", logging.getLogger("test.outage"), warn_after_s=60, clock=lambda: now[0])
    caplog.set_level(logging.INFO, logger="test.outage")
    for second in (0, 1, 2, 30, 61, 62, 90):
        now[0] = second
        outage.failed("The Kafka brokers are not reachable right now")
    now[0] = 95
    outage.succeeded()
    outage.succeeded()
    now[0] = 100
    outage.failed("again")
    assert [(record.levelname, record.getMessage()) for record in caplog.records] == [
        (
            "INFO",
            "token cache not refreshed: The Kafka brokers are not reachable right now (serving its last "
            "reading; retrying)",
        ),
        (
            "WARNING",
            "token cache not refreshed for 61 s: The Kafka brokers are not reachable right now (serving "
            "its last reading)",
        ),
        ("INFO", "token cache refreshed again after 95 s"),
        ("INFO", "token cache not refreshed: again (serving its last reading; retrying)"),
    ]


def test_its_poller_reports_each_round_to_it(caplog: pytest.LogCaptureFixture) -> None:
    """A round that fails starts an outage; the next that succeeds ends it (the Poller's thread, synchronised by
    an event that the second round sets)."""
    caplog.set_level(logging.INFO, logger="test.outage.poller")
    outage = RefreshOutage("acl cache", logging.getLogger("test.outage.poller"))
    rounds: list[int] = []
    second_reported = threading.Event()

    def work() -> None:
        rounds.append(len(rounds) + 1)
        if len(rounds) == 1:
            raise StoreUnavailable("brokers away")
        if len(rounds) == 3:
            second_reported.set()  # the round before has been reported by now: the Poller reports, then waits

    poller = outage.poller("test-outage-poller", work, interval_ms=1)
    poller.start()
    try:
        assert second_reported.wait(30)
    finally:
        poller.stop()
    messages = [record.getMessage() for record in caplog.records]
    assert messages[0] == "acl cache not refreshed: brokers away (serving its last reading; retrying)"
    assert messages[1].startswith("acl cache refreshed again after")
