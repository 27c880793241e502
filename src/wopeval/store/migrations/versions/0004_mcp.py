"""mcp: the digest of the tool listing each invocation was offered

Revision ID: 0004_mcp
Revises: 0003_task_detail
Create Date: 2026-12-01 14:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_mcp"
down_revision = "0003_task_detail"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("invocations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("tools_digest", sa.String(length=71), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("invocations", schema=None) as batch_op:
        batch_op.drop_column("tools_digest")
