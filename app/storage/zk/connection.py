"""One kazoo session per process, and the single place where kazoo's errors become domain errors."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionClosedError,
    ConnectionLoss,
    NoAuthError,
    OperationTimeoutError,
    RolledBackError,
    SessionExpiredError,
    ZookeeperError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState

from app.domain.errors import StoreUnavailable
from app.storage.zk.paths import PERSISTENT_PATHS

log = logging.getLogger(__name__)

_UNAVAILABLE = (
    ConnectionLoss,
    ConnectionClosedError,
    SessionExpiredError,
    OperationTimeoutError,
    KazooTimeoutError,
)


def split_connect_string(connect: str) -> tuple[str, str]:
    """``host:port[,host:port]/chroot`` -> (hosts, chroot or "")."""
    hosts, slash, chroot = connect.partition("/")
    return hosts, (slash + chroot).rstrip("/")


@contextmanager
def translated_errors() -> Iterator[None]:
    """Turn kazoo's connection-level failures into ``StoreUnavailable`` (answered 503 at the edge)."""
    try:
        yield
    except _UNAVAILABLE as exc:
        raise StoreUnavailable("ZooKeeper is not reachable right now; retry shortly.") from exc
    except NoAuthError as exc:
        raise StoreUnavailable("ZooKeeper refused kts access to its znodes (check zookeeper ACLs).") from exc


class ZkConnection:
    def __init__(self, connect: str, *, session_timeout_ms: int, request_timeout_s: float = 10.0) -> None:
        self._hosts, self._chroot = split_connect_string(connect)
        self._session_timeout_s = session_timeout_ms / 1000
        self.request_timeout_s = request_timeout_s
        self.client = KazooClient(hosts=self._hosts + self._chroot, timeout=self._session_timeout_s)
        self._state = KazooState.LOST
        self.client.add_listener(self._on_state)

    def _on_state(self, state: KazooState) -> None:
        if state != self._state:
            log.info("ZooKeeper session state %s", state)
        self._state = state

    def start(self, timeout_s: float = 15.0) -> None:
        """Connect, create the chroot if missing (as brokers do), then the persistent parents."""
        try:
            if self._chroot:
                bootstrap = KazooClient(hosts=self._hosts, timeout=self._session_timeout_s)
                bootstrap.start(timeout=timeout_s)
                try:
                    bootstrap.ensure_path(self._chroot)
                finally:
                    bootstrap.stop()
                    bootstrap.close()
            self.client.start(timeout=timeout_s)
            for path in PERSISTENT_PATHS:
                self.client.ensure_path(path)
        except (*_UNAVAILABLE, ZookeeperError) as exc:
            self.stop()
            raise StoreUnavailable(f"cannot connect to ZooKeeper at {self._hosts}: {exc!r}") from exc

    def stop(self) -> None:
        try:
            self.client.stop()
        finally:
            self.client.close()

    @property
    def connected(self) -> bool:
        return bool(self.client.connected)

    def ensure_connected(self) -> None:
        """Fail fast instead of queueing a request behind a suspended session."""
        if not self.client.connected:
            raise StoreUnavailable("The ZooKeeper session is not connected; retry shortly.")

    def commit(self, transaction: Any) -> Exception | None:
        """Commit a multi-op transaction; None when it applied, else the operation's own error (the
        others then report RolledBackError, which says nothing)."""
        self.ensure_connected()
        results = self.wait(transaction.commit_async())
        failures = [r for r in results if isinstance(r, Exception) and not isinstance(r, RolledBackError)]
        return failures[0] if failures else None

    def wait(self, async_result: Any) -> Any:
        """Wait for a kazoo async result with a bound, so no request can hang on ZooKeeper."""
        with translated_errors():
            return async_result.get(timeout=self.request_timeout_s)
