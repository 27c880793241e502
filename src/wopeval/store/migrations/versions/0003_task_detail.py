"""task detail: invocations and eval trials as the host saw them

Revision ID: 0003_task_detail
Revises: 0002_run_control
Create Date: 2026-12-01 12:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_task_detail"
down_revision = "0002_run_control"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "invocations",
        sa.Column("run_id", sa.String(length=300), nullable=False),
        sa.Column("invocation_id", sa.String(length=64), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("is_delegate", sa.Boolean(), nullable=False),
        sa.Column("node_id", sa.String(length=128), nullable=True),
        sa.Column("task_id", sa.String(length=128), nullable=True),
        sa.Column("trial", sa.Integer(), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("completed_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "invocation_id", name=op.f("pk_invocations")),
    )
    op.create_table(
        "task_trials",
        sa.Column("run_id", sa.String(length=300), nullable=False),
        sa.Column("task_id", sa.String(length=128), nullable=False),
        sa.Column("trial", sa.Integer(), nullable=False),
        sa.Column("passed", sa.Boolean(), nullable=False),
        sa.Column("wire_content", sa.String(length=8), nullable=False),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.Column("erased_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("run_id", "task_id", "trial", name=op.f("pk_task_trials")),
    )


def downgrade() -> None:
    op.drop_table("task_trials")
    op.drop_table("invocations")
