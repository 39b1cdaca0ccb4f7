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
    NoNodeError,
    OperationTimeoutError,
    RolledBackError,
    SessionExpiredError,
    ZookeeperError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState

from app.domain.errors import StoreUnavailable
from app.storage.zk.multi_read import MultiReadNotSupported, ReadResult, read_many_async
from app.storage.zk.paths import PERSISTENT_PATHS

log = logging.getLogger(__name__)

# Reads per multiRead: some 200 KB of answer for ordinary tokens, well under any jute.maxbuffer.
MULTI_READ_BATCH = 500

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
        self._multi_read = True

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

    def read_many(self, paths: list[str]) -> list[ReadResult]:
        """Many znodes, in order: ``(data, stat)`` or the error for that path (``NoNodeError``). multiRead
        batches where the server answers them, else pipelined reads. Connection failures raise."""
        self.ensure_connected()
        if self._multi_read:
            try:
                return self._read_multi(paths)
            except MultiReadNotSupported as exc:
                log.warning(
                    "ZooKeeper does not answer multiRead (%s): znodes are read one request each, which makes "
                    "start-up slower; ZooKeeper 3.6 and later answer it",
                    exc,
                )
                self._multi_read = False
        return self._read_pipelined(paths)

    def _read_multi(self, paths: list[str]) -> list[ReadResult]:
        batches = [paths[start : start + MULTI_READ_BATCH] for start in range(0, len(paths), MULTI_READ_BATCH)]
        pending = [(batch, read_many_async(self.client, batch)) for batch in batches]
        answers: list[ReadResult] = []
        for batch, result in pending:
            batch_answers = self.wait(result)
            if len(batch_answers) != len(batch):
                raise MultiReadNotSupported(f"{len(batch_answers)} answers to {len(batch)} reads")
            answers.extend(batch_answers)
        return answers

    def _read_pipelined(self, paths: list[str]) -> list[ReadResult]:
        pending = [self.client.get_async(path) for path in paths]
        answers: list[ReadResult] = []
        for result in pending:
            try:
                answers.append(self.wait(result))
            except NoNodeError as exc:
                answers.append(exc)
        return answers

    def wait(self, async_result: Any) -> Any:
        """Wait for a kazoo async result with a bound, so no request can hang on ZooKeeper."""
        with translated_errors():
            return async_result.get(timeout=self.request_timeout_s)
