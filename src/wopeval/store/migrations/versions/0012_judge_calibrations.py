"""judge_calibrations: each calibration of a rubric judge, tied to its digest

Revision ID: 0012_judge_calibrations
Revises: 0011_annotations
Create Date: 2026-12-03 15:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012_judge_calibrations"
down_revision = "0011_annotations"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "judge_calibrations",
        sa.Column("calibration_id", sa.String(length=64), nullable=False),
        sa.Column("tenant", sa.String(length=128), nullable=False),
        sa.Column("judge_id", sa.String(length=128), nullable=False),
        sa.Column("digest", sa.String(length=80), nullable=False),
        sa.Column("labels", sa.Integer(), nullable=False),
        sa.Column("kappa", sa.Float(), nullable=True),
        sa.Column("report", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("calibration_id", name=op.f("pk_judge_calibrations")),
    )
    op.create_index(
        "ix_judge_calibrations_latest",
        "judge_calibrations",
        ["tenant", "judge_id", "digest", "created_at"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_judge_calibrations_latest", table_name="judge_calibrations")
    op.drop_table("judge_calibrations")
