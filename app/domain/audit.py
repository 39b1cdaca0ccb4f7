"""Audit events: what happened, to which token or ACL, on whose behalf, and how it ended.

An event never carries an HMAC, a password, a salt or the secret key: only token ids, principals and
timestamps. Mutations are recorded before they happen (``pending``) and completed afterwards, so that no
change reaches ZooKeeper without an event (see ``app/service/audit.py`` for the protocol).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from app.domain.token_job import MAX_FRAMEWORK_LENGTH, MAX_JOB_TEXT_LENGTH, TokenJob


class Action(StrEnum):
    TOKEN_CREATE = "token.create"
    TOKEN_RENEW = "token.renew"
    TOKEN_EXPIRE = "token.expire"
    TOKEN_REVOKE = "token.revoke"  # a bulk revocation's summary; each token's own event is a token.expire
    TOKEN_DELETE_BY_SWEEP = "token.sweep"
    TOKEN_DESCRIBE = "token.describe"
    TOKEN_VERIFY = "token.verify"
    TOKEN_RENEWER_ADD = "token.renewer.add"  # kts cluster prepare-migration made kts's principal a renewer
    TOKEN_BRIDGE = "token.bridge"  # a change notification written for a KRaft controller's token change (dual-write)
    AUTHENTICATION = "authentication"
    ACL_ADD = "acl.add"
    ACL_REMOVE = "acl.remove"
    CREDENTIAL_SET = "credential.set"
    CREDENTIAL_DELETE = "credential.delete"
    ACCOUNT_LOCK = "account.lock"  # too many failed logins for one user name (app/domain/lockout.py)
    ACCOUNT_UNLOCK = "account.unlock"  # a super user unlocked it, or its lock was found expired
    LOCKOUT_RELEASE = "lockout.release"  # an operator released it with kts lockout release (no HTTP login)


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
    job: TokenJob | None = None  # a token.create's job, as its request named it (app/domain/token_job.py)

    def ended(self, outcome: Outcome, *, error_code: int | None = None, **details: Any) -> AuditEvent:
        # Built directly: ``dataclasses.replace`` looks the fields up at every call, which cost a sweep of 100k
        # tokens most of a second (each deletion's event ends once).
        return AuditEvent(
            action=self.action,
            outcome=outcome,
            principal=self.principal,
            owner=self.owner,
            token_requester=self.token_requester,
            token_id=self.token_id,
            error_code=error_code,
            details={**self.details, **details},
            job=self.job,
        )


@dataclass(frozen=True, slots=True)
class RequestContext:
    """Where a request came from; the service fills it into every event the request causes."""

    request_id: str | None = None
    client_address: str | None = None


class FieldType(StrEnum):
    """How a stored event field is typed; each storage or wire format maps these once."""

    SERIAL = "serial"  # the event id: a 64-bit integer the database assigns in insert order
    INT64 = "int64"
    INT32 = "int32"
    STRING = "string"  # text of at most ``max_length`` characters
    JSON_OBJECT = "json_object"  # a JSON object, stored and exported as its text ("{}" when empty)


@dataclass(frozen=True, slots=True)
class EventField:
    name: str  # snake_case: the database column, the Parquet and Spark column
    api_name: str  # camelCase: the HTTP API's field
    type: FieldType
    nullable: bool
    max_length: int | None = None  # STRING only
    # The API shows the fields of a group as one object named after it, null when all are null: the job
    # columns as ``job: {framework, id, name, user}``. Storage, Parquet and Spark keep them flat.
    api_group: str | None = None


EVENT_FIELDS: tuple[EventField, ...] = (
    EventField("id", "id", FieldType.SERIAL, nullable=False),
    EventField("timestamp", "timestamp", FieldType.INT64, nullable=False),  # ms since the epoch, as Kafka's tokens
    EventField("action", "action", FieldType.STRING, nullable=False, max_length=32),
    EventField("outcome", "outcome", FieldType.STRING, nullable=False, max_length=16),
    EventField("principal", "principal", FieldType.STRING, nullable=True, max_length=1100),
    EventField("owner", "owner", FieldType.STRING, nullable=True, max_length=1100),
    EventField("token_requester", "tokenRequester", FieldType.STRING, nullable=True, max_length=1100),
    EventField("token_id", "tokenId", FieldType.STRING, nullable=True, max_length=64),
    EventField("error_code", "errorCode", FieldType.INT32, nullable=True),  # the Kafka error code of a refusal
    EventField("service_id", "serviceId", FieldType.STRING, nullable=False, max_length=255),
    EventField("request_id", "requestId", FieldType.STRING, nullable=True, max_length=64),
    EventField("client_address", "clientAddress", FieldType.STRING, nullable=True, max_length=64),
    EventField("details", "details", FieldType.JSON_OBJECT, nullable=False),
    # The job a token.create named (app/domain/token_job.py); columns of their own, so the trail can be
    # filtered by them with an index (migrations/versions/0003_audit_job.py).
    EventField("job_framework", "jobFramework", FieldType.STRING, True, MAX_FRAMEWORK_LENGTH, "job"),
    EventField("job_id", "jobId", FieldType.STRING, True, MAX_JOB_TEXT_LENGTH, "job"),
    EventField("job_name", "jobName", FieldType.STRING, True, MAX_JOB_TEXT_LENGTH, "job"),
    EventField("job_user", "jobUser", FieldType.STRING, True, MAX_JOB_TEXT_LENGTH, "job"),
)
"""The shape of a stored audit event, in column order: the one definition the audit table, the API model
and the Parquet (Arrow) and Spark schemas are derived from. Changing it needs an alembic revision."""

JOB_COLUMNS: tuple[str, ...] = tuple(field.name for field in EVENT_FIELDS if field.api_group == "job")
"""The columns of a create's job: ``job_`` and each of ``token_job.JOB_KEYS``."""


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event as stored; its fields are ``EVENT_FIELDS`` in order (a test holds them together)."""

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
    job_framework: str | None = None
    job_id: str | None = None
    job_name: str | None = None
    job_user: str | None = None


@dataclass(frozen=True, slots=True)
class EventQuery:
    token_id: str | None = None
    principal: str | None = None
    action: str | None = None
    outcome: str | None = None
    job: TokenJob | None = None  # events whose job has each field this one gives
    since: int | None = None
    until: int | None = None
    limit: int = 100
    before_id: int | None = None  # the cursor: newest first, so inserts never shift later pages
