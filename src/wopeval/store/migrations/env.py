"""Alembic environment: always handed a live connection by `wopeval.store.db.migrate`."""

from __future__ import annotations

from alembic import context

from wopeval.store.queue_schema import is_queue_object
from wopeval.store.tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("wopeval migrations run through wopeval.store.db.migrate(engine)")

context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=True,
    compare_type=True,
    # The job queue's tables are Procrastinate's, applied by 0005_queue, not modelled here.
    include_name=lambda name, type_, _parents: type_ != "table" or not is_queue_object(name),
)
with context.begin_transaction():
    context.run_migrations()
