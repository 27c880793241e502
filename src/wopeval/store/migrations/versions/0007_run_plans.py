"""run_plans: an eval run's plan kept apart from its row

Every step a run lands moves its row (its last sequence, its landed trials), and SQLite
writes a row whole when it updates it: with the plan (a whole suite document) on the
row, each commit of an eval's trials rewrote the suite too.

Revision ID: 0007_run_plans
Revises: 0006_llm
Create Date: 2026-12-01 23:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_run_plans"
down_revision = "0006_llm"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "run_plans",
        sa.Column("run_id", sa.String(length=300), nullable=False),
        sa.Column("plan", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", name=op.f("pk_run_plans")),
    )
    # A run without a plan may hold SQL NULL or JSON null there: neither is copied.
    op.execute(
        "INSERT INTO run_plans (run_id, plan) SELECT run_id, plan FROM runs"
        " WHERE plan IS NOT NULL AND CAST(plan AS TEXT) <> 'null'"
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("plan")


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("plan", sa.JSON(), nullable=True))
    op.execute(
        "UPDATE runs SET plan = (SELECT run_plans.plan FROM run_plans"
        " WHERE run_plans.run_id = runs.run_id)"
    )
    op.drop_table("run_plans")
