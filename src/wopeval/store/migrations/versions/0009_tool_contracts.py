"""tool_listings and run_tool_listings: the MCP tool contract each run was offered

Revision ID: 0009_tool_contracts
Revises: 0007_run_plans
Create Date: 2026-12-03 04:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_tool_contracts"
down_revision = "0007_run_plans"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tool_listings",
        sa.Column("tenant", sa.String(length=128), nullable=False),
        sa.Column("digest", sa.String(length=71), nullable=False),
        sa.Column("listing", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("tenant", "digest", name=op.f("pk_tool_listings")),
    )
    op.create_table(
        "run_tool_listings",
        sa.Column("run_id", sa.String(length=300), nullable=False),
        sa.Column("server", sa.String(length=128), nullable=False),
        sa.Column("digest", sa.String(length=71), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "server", name=op.f("pk_run_tool_listings")),
    )
    op.create_index("ix_run_tool_listings_digest", "run_tool_listings", ["digest"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_run_tool_listings_digest", table_name="run_tool_listings")
    op.drop_table("run_tool_listings")
    op.drop_table("tool_listings")
