"""replica coordination without ZooKeeper: leader leases, live replicas, account locks, token quota guards,
token requesters, audit intent marks

Revision ID: 0002
Revises: 0001
Create Date: 2027-01-18
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "leader_leases",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("holder", sa.String(255), nullable=False),
        sa.Column("generation", sa.BigInteger(), nullable=False),
        sa.Column("expires_at_ms", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "replicas",
        sa.Column("instance_id", sa.String(255), primary_key=True),
        sa.Column("service_id", sa.String(255), nullable=False),
        sa.Column("started_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("expires_at_ms", sa.BigInteger(), nullable=False),
    )
    op.create_index("ix_replicas_expires_at_ms", "replicas", ["expires_at_ms"])
    op.create_table(
        "account_locks",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("account_key", sa.String(64), nullable=False),
        sa.Column("locked_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("until_ms", sa.BigInteger(), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("service_id", sa.String(255), nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_account_locks_account_key", "account_locks", ["account_key"])
    op.create_table(
        "token_quota_guards",
        sa.Column("kind", sa.String(16), primary_key=True),
        sa.Column("principal_key", sa.String(64), primary_key=True),
        sa.Column("attempts", sa.BigInteger(), nullable=False),
        sa.Column("settled", sa.BigInteger(), nullable=False),
        sa.Column("attempted_at_ms", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "token_requesters",
        sa.Column("token_id", sa.String(64), primary_key=True),
        sa.Column("requester", sa.Text(), nullable=False),
        sa.Column("owner", sa.Text(), nullable=False),
        sa.Column("event_id", sa.BigInteger(), nullable=True),
        sa.Column("reconstructed", sa.Boolean(), nullable=False),
        sa.Column("service_id", sa.String(255), nullable=False),
        sa.Column("recorded_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("counts_until_ms", sa.BigInteger(), nullable=True),
    )
    op.create_index("ix_token_requesters_event_id", "token_requesters", ["event_id"])
    op.create_index("ix_token_requesters_recorded_at_ms", "token_requesters", ["recorded_at_ms"])
    op.create_table(
        "audit_intent_marks",
        sa.Column("event_id", sa.BigInteger(), primary_key=True),
        sa.Column("marked_at_ms", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("audit_intent_marks")
    op.drop_table("token_requesters")
    op.drop_table("token_quota_guards")
    op.drop_table("account_locks")
    op.drop_table("replicas")
    op.drop_table("leader_leases")
