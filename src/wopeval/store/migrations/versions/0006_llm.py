"""llm: model exchanges of invocations, and recorded model answers kept for model replay

Revision ID: 0006_llm
Revises: 0005_queue
Create Date: 2026-12-01 11:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_llm"
down_revision = "0005_queue"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "model_calls",
        sa.Column("run_id", sa.String(length=300), nullable=False),
        sa.Column("invocation_id", sa.String(length=64), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("agent_id", sa.String(length=128), nullable=False),
        sa.Column("is_delegate", sa.Boolean(), nullable=False),
        sa.Column("via", sa.String(length=8), nullable=False),
        sa.Column("served_by", sa.String(length=8), nullable=False),
        sa.Column("status", sa.String(length=8), nullable=False),
        sa.Column("request_hash", sa.String(length=71), nullable=False),
        sa.Column("model", sa.String(length=256), nullable=True),
        sa.Column("response_model", sa.String(length=256), nullable=True),
        sa.Column("stream", sa.Boolean(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=True),
        sa.Column("completion_tokens", sa.Integer(), nullable=True),
        sa.Column("cost_usd", sa.Float(), nullable=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("recorded", sa.Boolean(), nullable=False),
        sa.Column("request", sa.JSON(), nullable=True),
        sa.Column("response", sa.JSON(), nullable=True),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.Column("erased_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("run_id", "invocation_id", "ordinal", name=op.f("pk_model_calls")),
    )
    with op.batch_alter_table("derived_fixtures", schema=None) as batch_op:
        batch_op.add_column(sa.Column("model_entries", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("derived_fixtures", schema=None) as batch_op:
        batch_op.drop_column("model_entries")
    op.drop_table("model_calls")
