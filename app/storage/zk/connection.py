"""One kazoo session per process. Every request waits with a bound, and what it raises for the session's
trouble becomes a domain error (the table in errors.py).

The session authenticates and encrypts as ``ZkClientSecurity`` says, and every znode kts creates gets the
ACL ``acl_for(path)`` chooses (``znodes/znode_acls.py``), as brokers make them.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import (
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    RolledBackError,
    RuntimeInconsistency,
    SessionClosedRequireSaslError,
    ZookeeperError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState, ZnodeStat
from kazoo.retry import KazooRetry
from kazoo.security import ACL

from app.domain.errors import ClusterNotFound, StoreUnavailable
from app.storage.zk import reachability
from app.storage.zk.client_security import ZkClientSecurity
from app.storage.zk.deferred_deletes import DeferredDeletes
from app.storage.zk.errors import LOGIN_REJECTED, UNREACHABLE, session_errors_translated
from app.storage.zk.multi_read import (
    MultiReadNotSupported,
    ReadResult,
    VersionRead,
    read_many_async,
    read_versions_async,
)
from app.storage.zk.poll_handler import PollingHandler
from app.storage.zk.sasl_rejection import treat_sasl_rejection_as_auth_failure
from app.storage.zk.written_notifications import WrittenNotifications
from app.storage.zk.znodes import PERSISTENT_PATHS, ClusterIdZNode, MalformedZNode

if TYPE_CHECKING:
    from app.storage.zk.write_fence import WriteFence

log = logging.getLogger(__name__)
R = TypeVar("R")

# Reads per multiRead: some 200 KB of answer for ordinary tokens, well under any jute.maxbuffer.
MULTI_READ_BATCH = 500
# multiReads in flight at once when answers are consumed batch by batch (``read_batches``): enough to keep the
# connection busy, few enough that the answers not consumed yet (data and a Stat of eleven integers per znode,
# some 800 bytes) stay a few MB, not the whole list's.
READ_WINDOW = 8


class SessionState(StrEnum):
    """The session's state as kazoo reports it to listeners (same values as kazoo's ``KazooState``)."""

    CONNECTED = "CONNECTED"
    SUSPENDED = "SUSPENDED"  # the connection dropped; the session may still be alive
    LOST = "LOST"  # expired or closed: ephemeral znodes and watches are gone


def split_connect_string(connect: str) -> tuple[str, str]:
    """``host:port[,host:port]/chroot`` -> (hosts, chroot or "")."""
    hosts, slash, chroot = connect.partition("/")
    return hosts, (slash + chroot).rstrip("/")


# How long start() still waits, after its own time-out, for a SASL login to be refused rather than
# reporting ZooKeeper as unreachable (only when a login was configured and none was refused yet).
AUTH_FAILED_GRACE_S = 5.0


class ZkConnection:
    def __init__(
        self,
        connect: str,
        *,
        session_timeout_ms: int,
        connection_timeout_ms: int | None = None,
        request_timeout_s: float = 10.0,
        security: ZkClientSecurity | None = None,
        require_cluster: bool = False,
    ) -> None:
        """``require_cluster``: start() refuses (ClusterNotFound) a path where no Kafka broker ever started,
        before it creates anything there."""
        self._hosts, self._chroot = split_connect_string(connect)
        self._require_cluster = require_cluster
        # The check every write of Kafka's metadata carries (transaction.py), set by the composition root.
        self.write_fence: WriteFence | None = None
        # The notifications this session wrote, until its change followers meet them (written_notifications.py).
        self.written_notifications = WrittenNotifications()
        # Deletions nothing waits for, carried by the session's next transaction (deferred_deletes.py).
        self.deferred_deletes = DeferredDeletes()
        self._session_timeout_s = session_timeout_ms / 1000
        # Kafka's zookeeper.connection.timeout.ms: how long start() waits for a session; unset, the session timeout.
        self.connection_timeout_s = (connection_timeout_ms or session_timeout_ms) / 1000
        self._kazoo_timeout_s = self._session_timeout_s
        self.request_timeout_s = request_timeout_s
        self.security = security or ZkClientSecurity()
        self._acls = self.security.acls
        self.client, self._login_refused = self._new_client(self._hosts + self._chroot)
        self._state = KazooState.LOST
        self.client.add_listener(self._on_state)
        self._multi_read = True

    def _new_client(self, hosts: str) -> tuple[KazooClient, threading.Event]:
        """A client, and the event set when ZooKeeper refuses its SASL login."""
        client = KazooClient(
            hosts=hosts,
            timeout=self._kazoo_timeout_s,
            # Reconnect every 2 s at most: kazoo's default back-off grows to an hour, which kept a replica
            # away for many seconds after a ZooKeeper outage had ended.
            connection_retry=KazooRetry(max_tries=-1, delay=0.1, backoff=2, max_delay=2.0),
            handler=PollingHandler(),  # waits with poll(2): kazoo's default built an epoll object per wait
            **self.security.kazoo_options(),
        )
        return client, treat_sasl_rejection_as_auth_failure(client)

    def acl_for(self, path: str) -> list[ACL]:
        """The ACL a znode created at ``path`` (relative to the chroot) gets."""
        return self._acls.for_path(path)

    def _on_state(self, state: KazooState) -> None:
        if state != self._state:
            log.info("ZooKeeper session state %s", state)
        self._state = state

    def start(self, timeout_s: float | None = None) -> None:
        """Connect (within ``connection_timeout_s`` unless told otherwise), create the chroot if missing (as
        brokers do), then the persistent parents; with ``require_cluster``, only where a Kafka cluster lives."""
        timeout_s = self.connection_timeout_s if timeout_s is None else timeout_s
        client, refused = self.client, self._login_refused
        self.deferred_deletes.reopen()
        try:
            if self._chroot:
                client, refused = self._new_client(self._hosts)
                client.start(timeout=timeout_s)
                try:
                    self._check_cluster(client, self._chroot)
                    self._ensure_paths(client, [self._chroot])
                finally:
                    client.stop()
                    client.close()
                client, refused = self.client, self._login_refused
                client.start(timeout=timeout_s)
            else:
                client.start(timeout=timeout_s)
                self._check_cluster(client, "")
            self._ensure_paths(client, PERSISTENT_PATHS)
        except ClusterNotFound:
            self.stop()
            raise
        except (*UNREACHABLE, ZookeeperError) as exc:
            # A refused SASL login can also surface as a time-out of start(): the refusal lands right after
            # kazoo announced it connected, or, on a loaded machine, only after start() gave up waiting. So ask
            # the SASL exchange, not the exception, and give a slow refusal a moment to land.
            login_rejected = refused.wait(AUTH_FAILED_GRACE_S if self.security.login else 0.0)
            self.stop()
            if isinstance(exc, SessionClosedRequireSaslError) and self.security.login is None:
                raise StoreUnavailable(
                    f"ZooKeeper at {self._hosts} requires a SASL login: set zookeeper.sasl.username and "
                    "zookeeper.sasl.password, or zookeeper.jaas.file"
                ) from exc
            if login_rejected or isinstance(exc, LOGIN_REJECTED):
                raise StoreUnavailable(
                    f"ZooKeeper at {self._hosts} rejected the login of {self.security.identity}: check "
                    "zookeeper.sasl.username and zookeeper.sasl.password, or the Client section of zookeeper.jaas.file"
                ) from exc
            if isinstance(exc, NoAuthError):
                raise StoreUnavailable(
                    f"ZooKeeper at {self._hosts} refused {self.security.identity} access to the znodes under "
                    f"{self._chroot or '/'}: their ACLs admit another identity (log in as the brokers do)"
                ) from exc
            if isinstance(exc, KazooTimeoutError):
                raise StoreUnavailable(
                    f"cannot connect to ZooKeeper at {self._hosts}: timed out after {timeout_s:g} s "
                    f"(zookeeper.connection.timeout.ms); {reachability.causes(self._hosts)}"
                ) from exc
            raise StoreUnavailable(f"cannot connect to ZooKeeper at {self._hosts}: {exc!r}") from exc

    def _check_cluster(self, client: KazooClient, chroot: str) -> None:
        """With ``require_cluster``, refuse a path under which no broker ever started: a mistyped chroot
        would otherwise get a kts that mints tokens no broker reads."""
        if not self._require_cluster:
            return
        path = chroot + ClusterIdZNode.PATH
        try:
            data, _ = client.get(path)
        except NoNodeError:
            raise ClusterNotFound(
                f"no Kafka cluster at {self._hosts}{chroot or '/'}: {path} does not exist (no broker has started "
                "with this zookeeper.connect; check its chroot, or set zookeeper.cluster.required=false to start "
                "kts before the first broker)"
            ) from None
        try:
            ClusterIdZNode.decode(data)
        except MalformedZNode as exc:
            raise ClusterNotFound(f"no Kafka cluster at {self._hosts}{chroot or '/'}: {exc}") from None

    def check(self, timeout_s: float | None = None, then: Callable[[], None] | None = None) -> None:
        """Connect once, run ``then`` (a start-up check) and disconnect: before serving, so that an unreachable
        ZooKeeper or a rejected login is the one line of the StoreUnavailable raised. kazoo's own retry warnings
        are held back meanwhile (logging is configured later, by serve(), and they would reach stderr around
        that line)."""
        timeout_s = self.connection_timeout_s if timeout_s is None else timeout_s
        # This session lives for the check only, so its timeout may be the connection timeout: kazoo bounds each
        # connection attempt by the session timeout and stop() waits for the attempt in flight, so a server that
        # accepts connections and never answers would otherwise hold start-up for the whole session timeout
        # after start() gave up.
        if timeout_s < self._kazoo_timeout_s:
            self._kazoo_timeout_s = timeout_s
            self.client.remove_listener(self._on_state)
            self.client, self._login_refused = self._new_client(self._hosts + self._chroot)
            self.client.add_listener(self._on_state)
        kazoo_log = logging.getLogger("kazoo")
        level = kazoo_log.level
        kazoo_log.setLevel(logging.CRITICAL)
        try:
            self.start(timeout_s)
            try:
                if then is not None:
                    then()
            finally:
                self.stop()
        finally:
            kazoo_log.setLevel(level)

    def _ensure_paths(self, client: KazooClient, paths: tuple[str, ...] | list[str]) -> None:
        """Create each path and its missing parents, each with its own ACL (as Kafka's
        ``createRecursive`` does; kazoo's ``ensure_path`` would give the parents the child's ACL)."""
        done: set[str] = set()
        for path in paths:
            parts = path.strip("/").split("/")
            for depth in range(1, len(parts) + 1):
                prefix = "/" + "/".join(parts[:depth])
                if prefix in done:
                    continue
                if client.exists(prefix) is None:
                    try:
                        client.create(prefix, b"", acl=self._acls.for_path(prefix))
                    except NodeExistsError:
                        pass  # another replica created it meanwhile
                done.add(prefix)

    def stop(self) -> None:
        self.deferred_deletes.close()
        try:
            self.client.stop()
        finally:
            self.client.close()

    @property
    def connected(self) -> bool:
        return bool(self.client.connected)

    @property
    def state(self) -> SessionState:
        return SessionState(self.client.state)

    def ensure_connected(self) -> None:
        """Fail fast instead of queueing a request behind a suspended session."""
        if not self.client.connected:
            raise StoreUnavailable("The ZooKeeper session is not connected; retry shortly.")

    def get(self, path: str) -> tuple[bytes, ZnodeStat] | None:
        """A znode's data and stat, or None when it does not exist."""
        self.ensure_connected()
        try:
            data, stat = self.wait(self.client.get_async(path))
        except NoNodeError:
            return None
        return data, stat

    def commit(self, transaction: Any) -> tuple[int, Exception] | None:
        """Commit a multi-op transaction; None when it applied, else the failing operation's index and own
        error (the others then report RolledBackError or RuntimeInconsistency, which say nothing)."""
        return first_failure(self.commit_results(transaction))

    def commit_results(self, transaction: Any) -> list[Any]:
        """Commit a multi-op transaction; each operation's result (a created znode's path, chroot-relative), or
        its error (``first_failure``)."""
        self.ensure_connected()
        return list(self.wait(transaction.commit_async()))

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

    def read_batches(self, paths: list[str]) -> Iterator[list[ReadResult]]:
        """``read_many``, answered a batch at a time (in order, ``MULTI_READ_BATCH`` paths each), with no more
        than ``READ_WINDOW`` batches read ahead: a caller that keeps only what it makes of each batch (start-up
        decoding every token) never holds the raw answers of the whole list at once."""
        return self._batches(paths, self.read_many, read_many_async)

    def read_version_batches(self, names: list[str], folder: str = "") -> Iterator[list[VersionRead]]:
        """``read_batches``, each answer a znode's data and version only, not its Stat (start-up's tokens); with
        ``folder`` (a path that ends with a slash), ``names`` are znodes in it, read without a path made for each."""

        def read(batch: list[str]) -> list[VersionRead]:
            return self._read_versions([folder + name for name in batch])

        def send(client: Any, batch: list[str]) -> Any:
            return read_versions_async(client, batch, folder)

        return self._batches(names, read, send)

    def _read_versions(self, paths: list[str]) -> list[VersionRead]:
        return [
            answer if isinstance(answer, Exception) else (answer[0], answer[1].version)
            for answer in self.read_many(paths)
        ]

    def _batches(
        self, paths: list[str], read: Callable[[list[str]], list[R]], send: Callable[[Any, list[str]], Any]
    ) -> Iterator[list[R]]:
        batches = [paths[start : start + MULTI_READ_BATCH] for start in range(0, len(paths), MULTI_READ_BATCH)]
        if not batches:
            return
        yield read(batches[0])  # also learns whether the server answers multiRead
        in_flight: deque[tuple[list[str], Any]] = deque()
        for batch in batches[1:]:
            if not self._multi_read:
                yield read(batch)
                continue
            in_flight.append((batch, send(self.client, batch)))
            if len(in_flight) >= READ_WINDOW:
                yield self._batch_answers(*in_flight.popleft())
        while in_flight:
            yield self._batch_answers(*in_flight.popleft())

    def _read_multi(self, paths: list[str]) -> list[ReadResult]:
        batches = [paths[start : start + MULTI_READ_BATCH] for start in range(0, len(paths), MULTI_READ_BATCH)]
        pending = [(batch, read_many_async(self.client, batch)) for batch in batches]
        answers: list[ReadResult] = []
        for batch, result in pending:
            answers.extend(self._batch_answers(batch, result))
        return answers

    def _batch_answers(self, batch: list[str], result: Any) -> list[Any]:
        batch_answers: list[Any] = self.wait(result)
        if len(batch_answers) != len(batch):
            raise MultiReadNotSupported(f"{len(batch_answers)} answers to {len(batch)} reads")
        return batch_answers

    def _read_pipelined(self, paths: list[str]) -> list[ReadResult]:
        pending = [self.client.get_async(path) for path in paths]
        answers: list[ReadResult] = []
        for result in pending:
            try:
                answers.append(self.wait(result))
            except NoNodeError as exc:
                answers.append(exc)
        return answers

    def sync(self) -> None:
        """Bring this session's server up to date with the ZooKeeper leader, so that the reads that follow
        see every write acknowledged anywhere before the call (a follower may lag by milliseconds)."""
        self.ensure_connected()
        self.wait(self.client.sync_async("/"))

    def wait(self, async_result: Any) -> Any:
        """Wait for a kazoo async result with a bound, so no request can hang on ZooKeeper."""
        with session_errors_translated():
            return async_result.get(timeout=self.request_timeout_s)


def first_failure(results: list[Any]) -> tuple[int, Exception] | None:
    """The failing operation's index and own error in a transaction's results (the others then report
    RolledBackError or RuntimeInconsistency, which say nothing), or None when it applied."""
    for index, result in enumerate(results):
        if isinstance(result, Exception) and not isinstance(result, RolledBackError | RuntimeInconsistency):
            return index, result
    return None
