"""The one table from kazoo's errors to kts's domain errors (app/domain/errors.py). Nothing outside
app/storage/zk sees a kazoo error; inside, every failed request and refused write is translated here.

    kazoo error                                  domain error
    raised by any request (the session's trouble):
    ConnectionLoss, ConnectionClosedError,       StoreUnavailable         ZooKeeper is not reachable (the
      SessionExpiredError, OperationTimeoutError,                         outcome of a write may be unknown)
      KazooTimeoutError
    NoAuthError                                  StoreUnavailable         the znodes' ACLs refuse kts
    AuthFailedError,                             StoreUnavailable         ZooKeeper rejected kts's login
      SessionClosedRequireSaslError
    answered for one operation of a write (the znode's state):
    BadVersionError, NotEmptyError               ConcurrentModification   a compare-and-set lost a race
    NodeExistsError                              ConcurrentModification   created meanwhile by another writer
    NoNodeError                                  the subject's ``gone``   deleted meanwhile (a token: 62)
    any other                                    StoreUnavailable         ZooKeeper refused the change

A read that finds no znode is not an error: the stores answer "absent" (``ZkConnection.get``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Final

from kazoo.exceptions import (
    AuthFailedError,
    BadVersionError,
    ConnectionClosedError,
    ConnectionLoss,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    OperationTimeoutError,
    SessionClosedRequireSaslError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError

from app.domain.errors import ConcurrentModification, KtsError, StoreUnavailable

UNREACHABLE: Final = (
    ConnectionLoss,
    ConnectionClosedError,
    SessionExpiredError,
    OperationTimeoutError,
    KazooTimeoutError,
)
LOGIN_REJECTED: Final = (AuthFailedError, SessionClosedRequireSaslError)


@dataclass(frozen=True, slots=True)
class Subject:
    """What an operation works on, for the messages of its errors."""

    name: str  # starts a sentence: "Token E8gTWaIxRUOaSRH7wY3N1w", "The ACLs of User:User:alice"
    kind: str  # "token", "ACL", "credential": "ZooKeeper refused the token change"
    gone: type[KtsError] = ConcurrentModification  # when its znode was deleted meanwhile


# Raised by a request, whatever znode it touches: each becomes StoreUnavailable with this message.
_SESSION_ROWS: Final[tuple[tuple[tuple[type[Exception], ...], str], ...]] = (
    (UNREACHABLE, "ZooKeeper is not reachable right now; retry shortly."),
    ((NoAuthError,), "ZooKeeper refused kts access to its znodes (check zookeeper ACLs)."),
    (LOGIN_REJECTED, "ZooKeeper rejected kts's login (check the zookeeper.sasl settings)."),
)
_SESSION_ERRORS: Final = tuple(kind for kinds, _ in _SESSION_ROWS for kind in kinds)

# Answered for one operation of a transaction, about the znode it guards.
_WRITE_ROWS: Final[tuple[tuple[tuple[type[Exception], ...], Callable[[Subject], KtsError]], ...]] = (
    (
        (BadVersionError, NotEmptyError),
        lambda subject: ConcurrentModification(f"{subject.name} changed while this request was being handled."),
    ),
    ((NodeExistsError,), lambda subject: ConcurrentModification(f"{subject.name} already exists.")),
    ((NoNodeError,), lambda subject: subject.gone(f"{subject.name} no longer exists.")),
)


def refused_write(failure: Exception, subject: Subject) -> KtsError:
    """The domain error for the operation of a transaction that ZooKeeper refused."""
    for kinds, translate in _WRITE_ROWS:
        if isinstance(failure, kinds):
            return translate(subject)
    return StoreUnavailable(f"ZooKeeper refused the {subject.kind} change: {type(failure).__name__}.")


def refused_read(failure: Exception, what: str) -> KtsError:
    """The domain error for one read of a batch (``what``: "token E8gT...", "a notification") that failed
    otherwise than by finding no znode."""
    return StoreUnavailable(f"ZooKeeper refused to read {what}: {type(failure).__name__}.")


@contextmanager
def session_errors_translated() -> Iterator[None]:
    """Turn what a request raises for the session's trouble into ``StoreUnavailable`` (answered 503 at the
    edge); errors about the znode itself (``NoNodeError``...) pass through for the store to judge."""
    try:
        yield
    except _SESSION_ERRORS as exc:
        raise StoreUnavailable(next(message for kinds, message in _SESSION_ROWS if isinstance(exc, kinds))) from exc
