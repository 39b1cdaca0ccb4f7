"""One line per outage of a cache's periodic refresh, not one per attempt (issue 34: a broker restart logs no
WARNING). The first failure is INFO (a restart or a controller move is over in seconds, and the cache keeps
serving its last reading); a failure that lasts ``warn_after_s`` is a WARNING, once; the first success after
failures says so at INFO. Readiness (``/readyz``, ``kts cluster status``) shows the cluster's state meanwhile."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from app.service.poller import Poller

WARN_AFTER_S = 60.0


class RefreshOutage:
    def __init__(
        self,
        what: str,
        log: logging.Logger,
        *,
        warn_after_s: float = WARN_AFTER_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._what = what
        self._log = log
        self._warn_after_s = warn_after_s
        self._clock = clock
        self._lock = threading.Lock()
        self._since: float | None = None
        self._warned = False

    def failed(self, cause: str) -> None:
        now = self._clock()
        with self._lock:
            if self._since is None:
                self._since = now
                level, text = logging.INFO, f"{self._what} not refreshed: {cause} (serving its last reading; retrying)"
            elif not self._warned and now - self._since >= self._warn_after_s:
                self._warned = True
                level = logging.WARNING
                text = f"{self._what} not refreshed for {now - self._since:.0f} s: {cause} (serving its last reading)"
            else:
                level, text = logging.DEBUG, f"{self._what} not refreshed: {cause}"
        self._log.log(level, "%s", text)

    def poller(self, name: str, work: Callable[[], object], *, interval_ms: int) -> Poller:
        """A ``Poller`` that runs ``work`` every ``interval_ms`` and reports each round here."""
        return Poller(
            name,
            work,
            interval_s=interval_ms / 1000,
            failed=lambda exc: self.failed(exc.message),
            succeeded=self.succeeded,
        )

    def succeeded(self) -> None:
        with self._lock:
            since, self._since, self._warned = self._since, None, False
        if since is not None:
            self._log.info("%s refreshed again after %.0f s", self._what, self._clock() - since)
