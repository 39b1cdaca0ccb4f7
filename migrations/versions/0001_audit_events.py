"""audit_events: one row per action, allowed or denied

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audit_events",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("timestamp", sa.BigInteger(), nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("principal", sa.String(1100)),
        sa.Column("owner", sa.String(1100)),
        sa.Column("token_requester", sa.String(1100)),
        sa.Column("token_id", sa.String(64)),
        sa.Column("error_code", sa.Integer()),
        sa.Column("service_id", sa.String(255), nullable=False),
        sa.Column("request_id", sa.String(64)),
        sa.Column("client_address", sa.String(64)),
        sa.Column("details", sa.Text(), nullable=False),
    )
    op.create_index("ix_audit_events_timestamp", "audit_events", ["timestamp"])
    op.create_index("ix_audit_events_token_id", "audit_events", ["token_id"])
    op.create_index("ix_audit_events_principal", "audit_events", ["principal"])
    op.create_index("ix_audit_events_owner", "audit_events", ["owner"])
    op.create_index("ix_audit_events_action_outcome", "audit_events", ["action", "outcome"])


def downgrade() -> None:
    op.drop_table("audit_events")
