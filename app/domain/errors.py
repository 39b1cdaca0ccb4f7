"""The service's error hierarchy. Every layer raises these; only ``app/api/errors.py`` maps them to HTTP.

    KtsError
    ├── KafkaError                  carries a Kafka error code (docs/kafka-compatibility.md#error-codes)
    │   ├── ClusterAuthorizationFailed      31
    │   ├── TokenAuthDisabled               61
    │   ├── TokenNotFound                   62
    │   ├── TokenOwnerMismatch              63
    │   ├── TokenRequestNotAllowed          64
    │   ├── TokenAuthorizationFailed        65
    │   ├── TokenExpired                    66
    │   └── InvalidPrincipalType            67
    ├── InvalidInput                a value the edge accepted syntactically but the rules refuse
    │   └── InvalidPrincipal
    ├── NotAuthenticated            no, malformed or wrong credentials
    ├── CredentialNotFound          no SCRAM credential of that mechanism for that user
    ├── ConcurrentModification      a compare-and-set lost against another writer
    ├── TooManyAttempts             too many failed logins or verifies; retry after ``retry_after_s``
    │   └── AccountLocked           too many failed logins for this user name, from anywhere
    ├── CapacityExhausted           a ZooKeeper child list brokers must list is full; retry after ``retry_after_s``
    ├── TokenQuotaExceeded          a create would take a per-user token quota past its limit
    ├── TokenWriteShareExceeded     a token write would take its principal past its share of the token lists;
    │                               retry after ``retry_after_s``
    ├── ClusterMigrating            the cluster moves to KRaft: kts in ZooKeeper mode writes no more
    └── StoreUnavailable            ZooKeeper (or another backing store) cannot be reached now
        └── ClusterNotFound         the ZooKeeper path holds no Kafka cluster (checked at start)

Messages are written for the caller: they never contain an HMAC, a password or the secret key.
"""

from __future__ import annotations


class KtsError(Exception):
    """Base of every error the service raises on purpose."""

    name: str = "ERROR"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class KafkaError(KtsError):
    """An error with a Kafka protocol error code."""

    code: int = -1


class ClusterAuthorizationFailed(KafkaError):
    name = "CLUSTER_AUTHORIZATION_FAILED"
    code = 31


class TokenAuthDisabled(KafkaError):
    name = "DELEGATION_TOKEN_AUTH_DISABLED"
    code = 61


class TokenNotFound(KafkaError):
    name = "DELEGATION_TOKEN_NOT_FOUND"
    code = 62


class TokenOwnerMismatch(KafkaError):
    name = "DELEGATION_TOKEN_OWNER_MISMATCH"
    code = 63


class TokenRequestNotAllowed(KafkaError):
    name = "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED"
    code = 64


class TokenAuthorizationFailed(KafkaError):
    name = "DELEGATION_TOKEN_AUTHORIZATION_FAILED"
    code = 65


class TokenExpired(KafkaError):
    name = "DELEGATION_TOKEN_EXPIRED"
    code = 66


class InvalidPrincipalType(KafkaError):
    name = "INVALID_PRINCIPAL_TYPE"
    code = 67


class InvalidInput(KtsError):
    name = "INVALID_REQUEST"


class InvalidPrincipal(InvalidInput):
    name = "INVALID_PRINCIPAL"


class NotAuthenticated(KtsError):
    name = "AUTHENTICATION_FAILED"

    def __init__(self, message: str, *, known: bool = True) -> None:
        """``known`` False: the credentials named no user or token that exists (their failures are audited
        per address, not one row per name)."""
        super().__init__(message)
        self.known = known


class CredentialNotFound(KtsError):
    name = "CREDENTIAL_NOT_FOUND"


class ConcurrentModification(KtsError):
    name = "CONCURRENT_MODIFICATION"


class TooManyAttempts(KtsError):
    name = "TOO_MANY_ATTEMPTS"

    def __init__(self, retry_after_s: int, message: str | None = None) -> None:
        super().__init__(message or f"Too many failed attempts; retry after {retry_after_s} seconds.")
        self.retry_after_s = retry_after_s


class CapacityExhausted(KtsError):
    """A write would take a child list brokers must list past the budget (app/domain/capacity.py)."""

    name = "TOKEN_CAPACITY_EXHAUSTED"

    def __init__(self, message: str, retry_after_s: int = 60) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class AccountLocked(TooManyAttempts):
    name = "ACCOUNT_LOCKED"

    def __init__(self, retry_after_s: int) -> None:
        super().__init__(
            retry_after_s,
            f"This account is locked after too many failed logins; retry after {retry_after_s} seconds.",
        )


class TokenQuotaExceeded(KtsError):
    """A refusal by policy (audited as denied, like the Kafka refusals), answered 429."""

    name = "TOKEN_QUOTA_EXCEEDED"


class TokenWriteShareExceeded(KtsError):
    """A refusal by policy (audited as denied), answered 429 with Retry-After: the caller's writes already hold
    its whole share of the child lists brokers must list (app/domain/token_share.py)."""

    name = "TOKEN_WRITE_SHARE_EXCEEDED"

    def __init__(self, message: str, retry_after_s: int = 60) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class ClusterMigrating(KtsError):
    """The cluster is migrating (or has migrated) to KRaft, whose controller deletes the token, ACL and credential
    znodes it did not make: the write was not made (app/domain/cluster_migration.py). Its outcome is known, so
    unlike StoreUnavailable the audit event is settled as failed at once."""

    name = "CLUSTER_MIGRATING"

    def __init__(self, message: str, retry_after_s: int = 60) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class StoreUnavailable(KtsError):
    name = "SERVICE_UNAVAILABLE"


class ClusterNotFound(StoreUnavailable):
    """``zookeeper.connect`` leads to no Kafka cluster (a mistyped chroot): kts does not start there."""

    name = "CLUSTER_NOT_FOUND"
