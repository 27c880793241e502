"""invocation stderr: what an agent said, and the runs and invocations that recorded nothing

Each invocation keeps what its agent said (a command agent's stderr, redacted, its last
16 KiB) and why, if it completed, it recorded nothing a replay could test; a completed
workflow run keeps its idle agents, so a listing shows them without reading invocations.

Revision ID: 0010_invocation_stderr
Revises: 0009_tool_contracts
Create Date: 2026-12-02 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_invocation_stderr"
down_revision = "0009_tool_contracts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("invocations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("stderr", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("idle", sa.JSON(), nullable=True))
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("idle", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("idle")
    with op.batch_alter_table("invocations", schema=None) as batch_op:
        batch_op.drop_column("idle")
        batch_op.drop_column("stderr")
