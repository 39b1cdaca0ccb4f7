"""The one table from Kafka's error codes to kts's domain errors (app/domain/errors.py), for the answers of the
token, ACL and SCRAM-credential RPCs. Nothing outside app/storage/kafka sees a Kafka code raw; connection
trouble becomes StoreUnavailable in wire.py.

    code  Kafka name                              domain error              why
    61    DELEGATION_TOKEN_AUTH_DISABLED          StoreUnavailable          the cluster has no token secret
    62    DELEGATION_TOKEN_NOT_FOUND              TokenNotFound             as in ZooKeeper mode
    63    DELEGATION_TOKEN_OWNER_MISMATCH         TokenOwnerMismatch        kts is not among the renewers
    64    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED    StoreUnavailable          kts's own login cannot ask (PLAINTEXT
                                                                            listener, token login): kts's set-up
    65    DELEGATION_TOKEN_AUTHORIZATION_FAILED   TokenAuthorizationFailed  kts's principal lacks CreateTokens
    66    DELEGATION_TOKEN_EXPIRED                TokenExpired              as in ZooKeeper mode
    67    INVALID_PRINCIPAL_TYPE                  InvalidPrincipalType      as in ZooKeeper mode
    31    CLUSTER_AUTHORIZATION_FAILED            StoreUnavailable          kts's principal lacks Alter/Describe
                                                                            on the cluster (as ZooKeeper's NoAuth)
    58    SASL_AUTHENTICATION_FAILED              StoreUnavailable          kts's login refused
    7, 15, 41, 89 and other retriable codes       StoreUnavailable          the controller is moving: retry
    any other                                     StoreUnavailable          named in the message

The HTTP caller's own permissions are decided by kts before any RPC (app/domain/token_rules.py), exactly as in
ZooKeeper mode; a refusal here is the cluster refusing kts, which the message says, naming the grant it needs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from app.domain.errors import (
    CredentialNotFound,
    InvalidInput,
    InvalidPrincipalType,
    KtsError,
    StoreUnavailable,
    TokenAuthorizationFailed,
    TokenExpired,
    TokenNotFound,
    TokenOwnerMismatch,
)

NONE = 0


class ClusterRefused(StoreUnavailable):
    """CLUSTER_AUTHORIZATION_FAILED: kts's principal lacks a grant on the cluster (the start's preflight names
    them all, app/storage/kafka/cluster.py)."""


_RETRIABLE: Final = {
    7: "REQUEST_TIMED_OUT",
    15: "COORDINATOR_NOT_AVAILABLE",
    41: "NOT_CONTROLLER",
    89: "THROTTLING_QUOTA_EXCEEDED",
    35: "UNSUPPORTED_VERSION",
}

_TABLE: Final[dict[int, Callable[[str], KtsError]]] = {
    61: lambda what: StoreUnavailable(
        "The cluster has delegation tokens turned off (delegation.token.secret.key is not set on its controllers)."
    ),
    62: lambda what: TokenNotFound(f"{what}: the token does not exist."),
    63: lambda what: TokenOwnerMismatch(
        f"{what}: the cluster refused kts's principal, which is neither the owner nor a renewer of this token "
        "(only tokens kts created, or that name kts's principal as a renewer, can be renewed or expired through kts)."
    ),
    64: lambda what: StoreUnavailable(
        f"{what}: the brokers refuse token requests from kts's login (a PLAINTEXT listener, or a token login)."
    ),
    65: lambda what: TokenAuthorizationFailed(
        f"{what}: the cluster refused kts's principal (grant it CreateTokens on the owner, or make it a super user)."
    ),
    66: lambda what: TokenExpired(f"{what}: the token has already expired."),
    67: lambda what: InvalidPrincipalType(f"{what}: the cluster refused a principal type (renewers must be User)."),
    31: lambda what: ClusterRefused(
        f"{what}: the cluster refused kts's principal (grant it Alter and Describe on the cluster)."
    ),
    58: lambda what: StoreUnavailable(f"{what}: the brokers refused kts's login."),
    91: lambda what: CredentialNotFound(f"{what}: no such SCRAM credential."),  # RESOURCE_NOT_FOUND
    87: lambda what: InvalidInput(f"{what}: the cluster refused the request as invalid."),  # INVALID_REQUEST
}


def refused(code: int, what: str) -> KtsError:
    """The domain error for a non-zero error code answered for ``what`` ("Create token", "The ACLs of ...")."""
    translate = _TABLE.get(code)
    if translate is not None:
        return translate(what)
    if code in _RETRIABLE:
        return StoreUnavailable(f"{what}: the cluster is busy ({_RETRIABLE[code]}); retry shortly.")
    return StoreUnavailable(f"{what}: the cluster refused the request (Kafka error code {code}).")


def check(code: int, what: str) -> None:
    if code != NONE:
        raise refused(code, what)
