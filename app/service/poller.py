"""A thread that does one thing again every interval until stopped: the life cycle of every periodic reader of
kts (the caches fed by Describe calls, the account locks and replica heartbeats of the database, the audit
reconciler), written once.

It lives beside the ports, the lowest layer both the services and the storage adapters may import. The work's
own failures (``KtsError``: a store that could not be reached) are the caller's to report, and the next round
comes all the same; anything else ends the thread, as a bug should.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from app.domain.errors import KtsError


def _nothing() -> None:
    pass


class Poller:
    """``start()`` runs ``work()`` every ``interval_s`` (first after one interval: the owner reads once itself
    before starting, so that a store that cannot be reached fails the start), ``stop()`` ends it and waits at
    most ``join_timeout_s`` for a round under way."""

    def __init__(
        self,
        name: str,
        work: Callable[[], object],
        *,
        interval_s: float,
        failed: Callable[[KtsError], None],
        succeeded: Callable[[], None] = _nothing,
        join_timeout_s: float = 5.0,
    ) -> None:
        self._name = name
        self._work = work
        self._interval_s = interval_s
        self._failed = failed
        self._succeeded = succeeded
        self._join_timeout_s = join_timeout_s
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=self._join_timeout_s)

    def _run(self) -> None:
        while not self._stopped.wait(self._interval_s):
            try:
                self._work()
            except KtsError as exc:
                self._failed(exc)
            else:
                self._succeeded()
