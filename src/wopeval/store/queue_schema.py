"""The job queue's schema in wopeval's database: Procrastinate's, at one pinned version.

`wopeval serve --executor queue` and `wopeval worker` share one PostgreSQL
database with a Procrastinate job queue in it. Its tables and functions are
applied by wopeval's own migration (0005_queue), from the `schema.sql` that the
installed Procrastinate distribution ships, and only if that file is the one of
the pinned version: a different Procrastinate would bring a schema that no
migration of ours has been written for.

The file is located without importing Procrastinate, so a host that never runs
the queue (every SQLite host, an in-process PostgreSQL host) never loads it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
from pathlib import Path

PINNED_VERSION = "3.10.0"
PINNED_SCHEMA_SHA256 = "c70ec4b400a60ad9592787653aae5ae77ae41bf801d56b5bd2712751a07f2009"
"""sha256 of Procrastinate 3.10.0's `procrastinate/sql/schema.sql`."""
PREFIX = "procrastinate_"
"""Every table, type and function of the queue's schema starts so."""


class QueueSchemaMismatch(RuntimeError):
    """The installed Procrastinate is not the version wopeval's migrations apply."""


def is_queue_object(name: str | None) -> bool:
    """A database object that belongs to the queue, not to wopeval's own models."""
    return bool(name) and str(name).startswith(PREFIX)


def pinned_schema() -> str:
    """The SQL of the pinned schema, read from the installed distribution."""
    spec = importlib.util.find_spec("procrastinate")
    if spec is None or spec.origin is None:
        raise QueueSchemaMismatch("procrastinate is not installed")
    installed = importlib.metadata.version("procrastinate")
    sql = (Path(spec.origin).parent / "sql" / "schema.sql").read_bytes()
    if installed != PINNED_VERSION or hashlib.sha256(sql).hexdigest() != PINNED_SCHEMA_SHA256:
        raise QueueSchemaMismatch(
            f"procrastinate {installed} is installed; wopeval's migrations apply the schema "
            f"of {PINNED_VERSION} (install procrastinate=={PINNED_VERSION})"
        )
    return sql.decode("utf-8")


DROP_SCHEMA = f"""
DO $$
DECLARE
    item record;
BEGIN
    FOR item IN SELECT tablename FROM pg_tables
        WHERE schemaname = current_schema() AND tablename LIKE '{PREFIX}%'
    LOOP
        EXECUTE format('DROP TABLE IF EXISTS %I CASCADE', item.tablename);
    END LOOP;
    FOR item IN SELECT p.oid::regprocedure AS signature FROM pg_proc p
        JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = current_schema() AND p.proname LIKE '{PREFIX}%'
    LOOP
        EXECUTE format('DROP FUNCTION IF EXISTS %s CASCADE', item.signature);
    END LOOP;
    FOR item IN SELECT t.typname FROM pg_type t
        JOIN pg_namespace n ON n.oid = t.typnamespace
        WHERE n.nspname = current_schema() AND t.typname LIKE '{PREFIX}%'
        AND t.typtype IN ('e', 'c')
    LOOP
        EXECUTE format('DROP TYPE IF EXISTS %I CASCADE', item.typname);
    END LOOP;
END;
$$;
"""
"""Removes every object of the queue's schema (the downgrade of 0005_queue)."""
