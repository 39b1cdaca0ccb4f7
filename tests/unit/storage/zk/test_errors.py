"""The one table from kazoo's errors to domain errors: every row, and what passes through untouched."""

from __future__ import annotations

import pytest
from kazoo.exceptions import (
    AuthFailedError,
    BadArgumentsError,
    BadVersionError,
    ConnectionLoss,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SessionClosedRequireSaslError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError

from app.domain.errors import ConcurrentModification, KtsError, StoreUnavailable, TokenNotFound
from app.storage.zk.errors import Subject, refused_read, refused_write, session_errors_translated

TOKEN = Subject("Token abc", "token", gone=TokenNotFound)
ACLS = Subject("The ACLs of User:User:alice", "ACL")


@pytest.mark.parametrize(
    ("failure", "subject", "expected", "message"),
    [
        (BadVersionError(), TOKEN, ConcurrentModification, "Token abc changed while this request was being handled."),
        (NotEmptyError(), ACLS, ConcurrentModification, "The ACLs of User:User:alice changed while"),
        (NodeExistsError(), TOKEN, ConcurrentModification, "Token abc already exists."),
        (NoNodeError(), TOKEN, TokenNotFound, "Token abc no longer exists."),
        (NoNodeError(), ACLS, ConcurrentModification, "The ACLs of User:User:alice no longer exists."),
        (NoAuthError(), TOKEN, StoreUnavailable, "ZooKeeper refused the token change: NoAuthError."),
        (BadArgumentsError(), ACLS, StoreUnavailable, "ZooKeeper refused the ACL change: BadArgumentsError."),
    ],
)
def test_a_refused_write_becomes_the_domain_error_for_its_subject(
    failure: Exception, subject: Subject, expected: type[KtsError], message: str
) -> None:
    error = refused_write(failure, subject)
    assert type(error) is expected
    assert error.message.startswith(message)


def test_a_refused_read_names_what_was_read() -> None:
    error = refused_read(NoAuthError(), "token abc")
    assert isinstance(error, StoreUnavailable)
    assert error.message == "ZooKeeper refused to read token abc: NoAuthError."


@pytest.mark.parametrize(
    ("raised", "message"),
    [
        (ConnectionLoss(), "ZooKeeper is not reachable right now; retry shortly."),
        (SessionExpiredError(), "ZooKeeper is not reachable right now; retry shortly."),
        (KazooTimeoutError(), "ZooKeeper is not reachable right now; retry shortly."),
        (NoAuthError(), "ZooKeeper refused kts access to its znodes (check zookeeper ACLs)."),
        (AuthFailedError(), "ZooKeeper rejected kts's login (check the zookeeper.sasl settings)."),
        (SessionClosedRequireSaslError(), "ZooKeeper rejected kts's login (check the zookeeper.sasl settings)."),
    ],
)
def test_the_sessions_trouble_becomes_store_unavailable(raised: Exception, message: str) -> None:
    with pytest.raises(StoreUnavailable) as caught, session_errors_translated():
        raise raised
    assert caught.value.message == message
    assert caught.value.__cause__ is raised


@pytest.mark.parametrize("raised", [NoNodeError(), BadVersionError(), ValueError("not kazoo's")])
def test_errors_about_the_znode_itself_pass_through_for_the_store_to_judge(raised: Exception) -> None:
    with pytest.raises(type(raised)), session_errors_translated():
        raise raised
