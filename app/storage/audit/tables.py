"""The audit table. Schema changes go through alembic revisions in ``migrations/``."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, Integer, MetaData, String, Table, Text

metadata = MetaData()

audit_events = Table(
    "audit_events",
    metadata,
    # BigInteger ids on PostgreSQL; SQLite needs INTEGER PRIMARY KEY for its rowid alias (autoincrement).
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("timestamp", BigInteger, nullable=False),  # ms since the epoch, like Kafka's token timestamps
    Column("action", String(32), nullable=False),
    Column("outcome", String(16), nullable=False),
    Column("principal", String(1100)),
    Column("owner", String(1100)),
    Column("token_requester", String(1100)),
    Column("token_id", String(64)),
    Column("error_code", Integer),
    Column("service_id", String(255), nullable=False),
    Column("request_id", String(64)),
    Column("client_address", String(64)),
    Column("details", Text, nullable=False, default="{}"),
    Index("ix_audit_events_timestamp", "timestamp"),
    Index("ix_audit_events_token_id", "token_id"),
    Index("ix_audit_events_principal", "principal"),
    Index("ix_audit_events_owner", "owner"),
    Index("ix_audit_events_action_outcome", "action", "outcome"),
)
