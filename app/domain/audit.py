"""Audit events: what happened, to which token or ACL, on whose behalf, and how it ended.

An event never carries an HMAC, a password, a salt or the secret key: only token ids, principals and
timestamps. Mutations are recorded before they happen (``pending``) and completed afterwards, so that no
change reaches ZooKeeper without an event (see ``app/service/audit.py`` for the protocol).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any


class Action(StrEnum):
    TOKEN_CREATE = "token.create"
    TOKEN_RENEW = "token.renew"
    TOKEN_EXPIRE = "token.expire"
    TOKEN_DELETE_BY_SWEEP = "token.sweep"
    TOKEN_DESCRIBE = "token.describe"
    TOKEN_VERIFY = "token.verify"
    AUTHENTICATION = "authentication"
    ACL_ADD = "acl.add"
    ACL_REMOVE = "acl.remove"
    CREDENTIAL_SET = "credential.set"
    CREDENTIAL_DELETE = "credential.delete"


class Outcome(StrEnum):
    PENDING = "pending"  # recorded before the change; completed by the request or by reconciliation
    SUCCEEDED = "succeeded"
    DENIED = "denied"  # refused by a rule (Kafka error code in error_code)
    FAILED = "failed"  # allowed but not done (store unavailable, conflict, crash before the write)


@dataclass(frozen=True, slots=True)
class AuditEvent:
    action: Action
    outcome: Outcome
    principal: str | None = None
    owner: str | None = None
    token_requester: str | None = None
    token_id: str | None = None
    error_code: int | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def ended(self, outcome: Outcome, *, error_code: int | None = None, **details: Any) -> AuditEvent:
        return replace(self, outcome=outcome, error_code=error_code, details={**self.details, **details})


@dataclass(frozen=True, slots=True)
class RequestContext:
    """Where a request came from; the service fills it into every event the request causes."""

    request_id: str | None = None
    client_address: str | None = None


@dataclass(frozen=True, slots=True)
class StoredEvent:
    id: int
    timestamp: int
    action: str
    outcome: str
    principal: str | None
    owner: str | None
    token_requester: str | None
    token_id: str | None
    error_code: int | None
    service_id: str
    request_id: str | None
    client_address: str | None
    details: dict[str, Any]


@dataclass(frozen=True, slots=True)
class EventQuery:
    token_id: str | None = None
    principal: str | None = None
    action: str | None = None
    outcome: str | None = None
    since: int | None = None
    until: int | None = None
    limit: int = 100
    before_id: int | None = None  # the cursor: newest first, so inserts never shift later pages
