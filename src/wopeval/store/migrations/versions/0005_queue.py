"""queue: the run's project digest, trial outcomes, and the Procrastinate schema (PostgreSQL)

Revision ID: 0005_queue
Revises: 0004_mcp
Create Date: 2026-12-02 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from wopeval.store.queue_schema import DROP_SCHEMA, pinned_schema

revision = "0005_queue"
down_revision = "0004_mcp"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("catalog_digest", sa.String(length=71), nullable=True))
        batch_op.add_column(
            sa.Column("landed_trials", sa.Integer(), server_default="0", nullable=False)
        )
    with op.batch_alter_table("task_trials", schema=None) as batch_op:
        batch_op.add_column(sa.Column("latency_ms", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("fixture_misses", sa.Integer(), nullable=True))
    if op.get_bind().dialect.name == "postgresql":
        _execute_script(pinned_schema())


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _execute_script(DROP_SCHEMA)
    with op.batch_alter_table("task_trials", schema=None) as batch_op:
        batch_op.drop_column("fixture_misses")
        batch_op.drop_column("latency_ms")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("landed_trials")
        batch_op.drop_column("catalog_digest")


def _execute_script(script: str) -> None:
    """Run a multi-statement script as written: the driver is handed no parameters, so its
    own `%` placeholders are escaped rather than interpolated."""
    op.get_bind().exec_driver_sql(script.replace("%", "%%"))
