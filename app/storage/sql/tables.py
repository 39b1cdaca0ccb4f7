"""The tables replicas coordinate through, on the audit database's metadata (one schema, one alembic history:
revision 0002 creates them; a test holds these definitions and the revisions together).

Times in ``*_ms`` columns that decide who may act (lease and replica expiry, lock ends) are the database's
own clock (db_time.py), so replicas whose clocks disagree still agree on them. Principals and account names
are keyed by their SHA-256 (``*_key`` columns): any text, however long or odd, makes a fixed-size key.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import BigInteger, Boolean, Column, Index, Integer, String, Table, Text

from app.storage.audit.tables import metadata

SERVICE_ID_LENGTH = 255  # as audit_events.service_id
KEY_LENGTH = 64  # a SHA-256 in hex
TOKEN_ID_LENGTH = 64  # as audit_events.token_id

leader_leases = Table(
    "leader_leases",
    metadata,
    Column("name", String(64), primary_key=True),  # which leadership: one row each
    Column("holder", String(SERVICE_ID_LENGTH), nullable=False),  # the holding replica's instance id
    Column("generation", BigInteger, nullable=False),  # +1 at every acquisition: a fencing token
    Column("expires_at_ms", BigInteger, nullable=False),
)

replicas = Table(
    "replicas",
    metadata,
    Column("instance_id", String(SERVICE_ID_LENGTH), primary_key=True),  # service.id plus a random suffix
    Column("service_id", String(SERVICE_ID_LENGTH), nullable=False),
    Column("started_at_ms", BigInteger, nullable=False),
    Column("expires_at_ms", BigInteger, nullable=False),
    Index("ix_replicas_expires_at_ms", "expires_at_ms"),
)

account_locks = Table(
    "account_locks",
    metadata,
    # SQLite would reuse the id of a deleted last row; ids here are never reused, as on PostgreSQL.
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("kind", String(8), nullable=False),  # lock, or release (a super user's unlock, heard by every replica)
    Column("account_key", String(KEY_LENGTH), nullable=False),  # app/domain/lockout.py's account_key
    Column("locked_at_ms", BigInteger, nullable=False),
    Column("until_ms", BigInteger, nullable=False),
    Column("failures", Integer, nullable=False),
    Column("service_id", String(SERVICE_ID_LENGTH), nullable=False),
    Index("ix_account_locks_account_key", "account_key"),
    sqlite_autoincrement=True,
)

token_quota_guards = Table(
    "token_quota_guards",
    metadata,
    Column("kind", String(16), primary_key=True),  # owner | requester (app/domain/token_quota.py)
    Column("principal_key", String(KEY_LENGTH), primary_key=True),
    Column("attempts", BigInteger, nullable=False),  # creates charged to this quota begun, ever (its version)
    Column("settled", BigInteger, nullable=False),  # of those, how many are known to have ended either way
    Column("attempted_at_ms", BigInteger, nullable=False),  # when the latest began
)

token_requesters = Table(
    "token_requesters",
    metadata,
    Column("token_id", String(TOKEN_ID_LENGTH), primary_key=True),  # the cluster's token id
    Column("requester", Text, nullable=False),  # the HTTP caller's principal, as a JSON string (exact)
    Column("owner", Text, nullable=False),  # as a JSON string
    Column("event_id", BigInteger, nullable=True),  # the token.create audit event that names the token
    Column("reconstructed", Boolean, nullable=False),  # no request's event named it: the reconciler made one
    Column("service_id", String(SERVICE_ID_LENGTH), nullable=False),  # the replica that recorded the row
    Column("recorded_at_ms", BigInteger, nullable=False),  # the database's clock
    # When the token stops counting against quotas (its expiry or maximum, the earlier); None: not known.
    Column("counts_until_ms", BigInteger, nullable=True),
    Index("ix_token_requesters_event_id", "event_id"),
    Index("ix_token_requesters_recorded_at_ms", "recorded_at_ms"),
)

audit_intent_marks = Table(
    "audit_intent_marks",
    metadata,
    Column("event_id", BigInteger, primary_key=True),  # a pending audit event whose change the cluster made
    Column("marked_at_ms", BigInteger, nullable=False),
)


def text_key(text: str) -> str:
    """The ``*_key`` of a principal or an account: SHA-256 of its UTF-8 (lone surrogates kept), in hex."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
