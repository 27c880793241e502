"""annotations: RFC 0056 run annotations, a side resource of a run, never one of its events

Revision ID: 0011_annotations
Revises: 0010_invocation_stderr
Create Date: 2026-12-03 14:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011_annotations"
down_revision = "0010_invocation_stderr"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "annotations",
        sa.Column("run_id", sa.String(length=300), nullable=False),
        sa.Column("annotation_id", sa.String(length=64), nullable=False),
        sa.Column("tenant", sa.String(length=128), nullable=False),
        sa.Column("node_id", sa.String(length=128), nullable=True),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("label", sa.String(length=256), nullable=True),
        sa.Column("doc", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "annotation_id", name=op.f("pk_annotations")),
    )
    op.create_index(
        "ix_annotations_tenant_kind_created",
        "annotations",
        ["tenant", "kind", "created_at"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_annotations_tenant_kind_created", table_name="annotations")
    op.drop_table("annotations")
