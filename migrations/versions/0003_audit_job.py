"""audit_events: the job a token.create named (framework, id, name, user), in indexed columns

Revision ID: 0003
Revises: 0002
Create Date: 2027-02-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# The column and its length: app/domain/audit.py's EVENT_FIELDS (written out: a revision never changes).
JOB_COLUMNS = (("job_framework", 32), ("job_id", 256), ("job_name", 256), ("job_user", 256))


def upgrade() -> None:
    # Nullable columns without a default: adding them rewrites no row, on SQLite or PostgreSQL.
    with op.batch_alter_table("audit_events") as batch:
        for name, length in JOB_COLUMNS:
            batch.add_column(sa.Column(name, sa.String(length), nullable=True))
    for name, _ in JOB_COLUMNS:
        # Partial: only the events that name a job are in the index (app/storage/audit/tables.py says why).
        present = sa.text(f"{name} IS NOT NULL")
        op.create_index(
            f"ix_audit_events_{name}", "audit_events", [name], sqlite_where=present, postgresql_where=present
        )


def downgrade() -> None:
    for name, _ in reversed(JOB_COLUMNS):
        op.drop_index(f"ix_audit_events_{name}", table_name="audit_events")
    with op.batch_alter_table("audit_events") as batch:
        for name, _ in reversed(JOB_COLUMNS):
            batch.drop_column(name)
