"""events: a partial index of the `agent.invocation-started` events

Revision ID: 0013_invocation_started_index
Revises: 0012_judge_calibrations
Create Date: 2026-12-03 23:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013_invocation_started_index"
down_revision = "0012_judge_calibrations"
branch_labels = None
depends_on = None

_STARTED = sa.text("type = 'agent.invocation-started'")


def upgrade() -> None:
    op.create_index(
        "ix_events_invocation_started",
        "events",
        ["run_id", "sequence"],
        unique=False,
        sqlite_where=_STARTED,
        postgresql_where=_STARTED,
    )


def downgrade() -> None:
    op.drop_index("ix_events_invocation_started", table_name="events")
