"""Alembic environment: always handed a live connection by `wopeval.store.db.migrate`."""

from __future__ import annotations

from alembic import context

from wopeval.store.tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("wopeval migrations run through wopeval.store.db.migrate(engine)")

context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=True,
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
