"""model_apis: which wire API each model exchange used

The model proxy serves OpenAI Chat Completions, OpenAI Responses and Anthropic
Messages; an exchange recorded before it served more than the first used chat.

Revision ID: 0008_model_apis
Revises: 0007_run_plans
Create Date: 2026-12-02 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_model_apis"
down_revision = "0007_run_plans"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("model_calls", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("api", sa.String(length=16), nullable=False, server_default="chat")
        )


def downgrade() -> None:
    with op.batch_alter_table("model_calls", schema=None) as batch_op:
        batch_op.drop_column("api")
