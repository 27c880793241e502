"""run_plans, derived_fixtures: the large JSON values compressed with lz4 on PostgreSQL

Revision ID: 0014_lz4_copies
Revises: 0013_invocation_started_index
Create Date: 2026-12-04 18:00:00
"""

from __future__ import annotations

from alembic import op

revision = "0014_lz4_copies"
down_revision = "0013_invocation_started_index"
branch_labels = None
depends_on = None

COLUMNS = (
    ("run_plans", "plan"),
    ("derived_fixtures", "entries"),
    ("derived_fixtures", "model_entries"),
)
"""What an eval create writes by the megabyte: the plan holds the suite document (a task's
input may list 10,000 calls), the copy a source's derived entries. PostgreSQL compresses
a value of more than ~2 kB before it stores it (TOAST), with pglz by default: on the
2-core bench machine a 0.5 MB plan took 6–22 ms to insert with pglz and 3–9 ms with lz4,
a 1.2 MB copy 16–47 against 6–24 ms (best–median), inside the create's transaction."""


def _has_lz4() -> bool:
    """PostgreSQL 14 or later built with lz4 (Debian's and the official images are); on an
    older or other server the columns keep pglz, which stores the same values."""
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return False
    offered = bind.exec_driver_sql(
        "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
    ).scalar()
    return bool(offered)


def _compress(method: str) -> None:
    if not _has_lz4():
        return
    for table, column in COLUMNS:
        # Only the values written from now on: a stored one keeps the method it has.
        op.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION {method}")


def upgrade() -> None:
    _compress("lz4")


def downgrade() -> None:
    _compress("default")
