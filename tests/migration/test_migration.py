"""The migrations build exactly the schema the models declare, on SQLite and PostgreSQL (G10)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, inspect, text
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.schema import CreateIndex

from _backends import Backend
from wopeval.store import create_engine, migrate
from wopeval.store.db import HEAD_REVISION, alembic_config
from wopeval.store.queue_schema import is_queue_object
from wopeval.store.tables import INVOCATION_STARTED, events, metadata, run_plans

VERSION_TABLE = "alembic_version"
QUEUE_TABLES = {
    "procrastinate_jobs",
    "procrastinate_events",
    "procrastinate_workers",
    "procrastinate_periodic_defers",
}
"""The job queue's tables: migration 0005_queue applies them on PostgreSQL only."""


@pytest.fixture
async def empty_database(backend: Backend, tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    url = backend.new_database() or f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}"
    engine = create_engine(url)
    try:
        yield engine
    finally:
        await engine.dispose()


def _schema_diff(connection: Connection) -> list[Any]:
    context = MigrationContext.configure(
        connection,
        opts={
            "compare_type": True,
            "compare_server_default": True,
            "include_name": lambda name, type_, _: type_ != "table" or not is_queue_object(name),
        },
    )
    diff: list[Any] = compare_metadata(context, metadata)
    return diff


def _tables(connection: Connection) -> set[str]:
    return set(inspect(connection).get_table_names())


def _queue_functions(connection: Connection) -> int:
    if connection.dialect.name != "postgresql":
        return 0
    found = connection.exec_driver_sql(
        "SELECT count(*) FROM pg_proc WHERE starts_with(proname, 'procrastinate')"
    ).scalar_one()
    return int(found)


def _queue_tables(connection: Connection) -> set[str]:
    return QUEUE_TABLES if connection.dialect.name == "postgresql" else set()


def _current_revision(connection: Connection) -> str | None:
    revision: str | None = MigrationContext.configure(connection).get_current_revision()
    return revision


def _head() -> str | None:
    head: str | None = ScriptDirectory.from_config(alembic_config()).get_current_head()
    return head


def _downgrade_to_base(connection: Connection) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    command.downgrade(config, "base")


def _upgrade_to_previous(connection: Connection) -> None:
    """The schema one revision below head, as an older wopeval left it."""
    config = alembic_config()
    config.attributes["connection"] = connection
    command.upgrade(config, "head-1")


async def test_an_empty_database_upgraded_to_head_equals_the_models(
    empty_database: AsyncEngine,
) -> None:
    async with empty_database.connect() as connection:
        assert await connection.run_sync(_tables) == set()
    await migrate(empty_database)
    async with empty_database.connect() as connection:
        assert await connection.run_sync(_schema_diff) == []
        queue = await connection.run_sync(_queue_tables)
        assert await connection.run_sync(_tables) == set(metadata.tables) | {VERSION_TABLE} | queue
        current = await connection.run_sync(_current_revision)
    assert current is not None
    assert current == _head()


async def test_migrating_again_changes_nothing(empty_database: AsyncEngine) -> None:
    await migrate(empty_database)
    await migrate(empty_database)
    async with empty_database.connect() as connection:
        assert await connection.run_sync(_schema_diff) == []


async def test_downgrade_to_base_and_back_up(empty_database: AsyncEngine) -> None:
    await migrate(empty_database)
    async with empty_database.begin() as connection:
        await connection.run_sync(_downgrade_to_base)
    async with empty_database.connect() as connection:
        assert await connection.run_sync(_tables) <= {VERSION_TABLE}
        assert await connection.run_sync(_queue_functions) == 0
        assert await connection.run_sync(_current_revision) is None
    await migrate(empty_database)
    async with empty_database.connect() as connection:
        assert await connection.run_sync(_schema_diff) == []
        assert await connection.run_sync(_queue_tables) <= await connection.run_sync(_tables)


def test_the_head_migrate_checks_for_is_alembics_head() -> None:
    """`migrate` leaves a database stamped HEAD_REVISION to itself: adding a migration
    without moving HEAD_REVISION would leave existing databases behind."""
    assert _head() == HEAD_REVISION


async def test_a_database_one_revision_behind_is_brought_to_head(
    empty_database: AsyncEngine,
) -> None:
    async with empty_database.begin() as connection:
        await connection.run_sync(_upgrade_to_previous)
    async with empty_database.connect() as connection:
        behind = await connection.run_sync(_current_revision)
    assert behind is not None
    assert behind != HEAD_REVISION
    await migrate(empty_database)
    async with empty_database.connect() as connection:
        assert await connection.run_sync(_current_revision) == HEAD_REVISION
        assert await connection.run_sync(_schema_diff) == []


def _to(revision: str, *, down: bool = False) -> Callable[[Connection], None]:
    def move(connection: Connection) -> None:
        config = alembic_config()
        config.attributes["connection"] = connection
        (command.downgrade if down else command.upgrade)(config, revision)

    return move


@pytest.mark.parametrize(
    ("before_it", "revision", "table", "index"),
    [
        # RFC 0056 annotations live beside the runs.
        ("0010_invocation_stderr", "0011_annotations", "annotations",
         ["tenant", "kind", "created_at"]),
        # A judge's calibrations live in their own table.
        ("0011_annotations", "0012_judge_calibrations", "judge_calibrations",
         ["tenant", "judge_id", "digest", "created_at"]),
    ],
)  # fmt: skip
async def test_a_side_table_migration_adds_its_table_and_takes_it_away_again(
    empty_database: AsyncEngine, before_it: str, revision: str, table: str, index: list[str]
) -> None:
    """The upgrade adds its table (with its index) and touches no other; the downgrade drops
    it and nothing else."""
    async with empty_database.begin() as connection:
        await connection.run_sync(_to(before_it))
        before = await connection.run_sync(_tables)
    assert table not in before
    async with empty_database.begin() as connection:
        await connection.run_sync(_to(revision))
        assert await connection.run_sync(_tables) == before | {table}
        indexes = await connection.run_sync(lambda sync: inspect(sync).get_indexes(table))
        assert [found["column_names"] for found in indexes] == [index]
    async with empty_database.begin() as connection:
        await connection.run_sync(_to(before_it, down=True))
        assert await connection.run_sync(_tables) == before


def _index_definition(connection: Connection, name: str) -> str:
    if connection.dialect.name == "postgresql":
        query = "SELECT indexdef FROM pg_indexes WHERE indexname = :name"
    else:
        query = "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = :name"
    return str(connection.execute(text(query), {"name": name}).scalar_one())


async def test_the_partial_index_has_the_condition_the_tables_declare(
    empty_database: AsyncEngine,
) -> None:
    # PostgreSQL's condition is declared by `create_engine` (tables.declare_postgresql_conditions),
    # not in the table, so that SQLite never loads that dialect.
    await migrate(empty_database)
    (started,) = (index for index in events.indexes if index.name == "ix_events_invocation_started")
    async with empty_database.connect() as connection:
        assert started.dialect_options[connection.dialect.name]["where"] is INVOCATION_STARTED
        declared = str(CreateIndex(started).compile(dialect=connection.dialect))
        built = await connection.run_sync(_index_definition, "ix_events_invocation_started")
    assert declared.endswith("WHERE type = 'agent.invocation-started'")
    assert "'agent.invocation-started'" in built.partition(" WHERE ")[2]


def _compression(connection: Connection) -> dict[tuple[str, str], str]:
    """Each large JSON column of an eval create (migration 0014) and its own compression
    method: 'l' for lz4, '' for the server's default (pglz)."""
    found = connection.execute(
        text(
            "SELECT attrelid::regclass::text, attname, attcompression FROM pg_attribute"
            " WHERE attrelid IN ('run_plans'::regclass, 'derived_fixtures'::regclass)"
            " AND attname IN ('plan', 'entries', 'model_entries')"
        )
    )
    return {(table, column): method for table, column, method in found}


def _stored_compression(connection: Connection) -> str:
    """How a plan of a megabyte is stored once inserted."""
    plan = {"suite": {"tasks": [{"taskId": f"t{i}", "input": {"call": i}} for i in range(40_000)]}}
    connection.execute(run_plans.insert().values(run_id="big", plan=plan))
    query = "SELECT pg_column_compression(plan) FROM run_plans WHERE run_id = 'big'"
    return str(connection.execute(text(query)).scalar_one())


async def test_an_eval_creates_megabytes_are_compressed_with_lz4_on_postgresql(
    empty_database: AsyncEngine,
) -> None:
    """A plan holding its suite and a derived copy are megabytes in the create's
    transaction: lz4 compresses them in a fraction of pglz's time (migration 0014). The
    downgrade gives the columns back the server's default."""
    if empty_database.dialect.name != "postgresql":
        pytest.skip("TOAST compression is PostgreSQL's")
    await migrate(empty_database)
    async with empty_database.begin() as connection:
        offered = await connection.execute(
            text("SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'")
        )
        if "lz4" not in offered.scalar_one():
            pytest.skip("this PostgreSQL was built without lz4")
        assert set((await connection.run_sync(_compression)).values()) == {"l"}
        assert await connection.run_sync(_stored_compression) == "lz4"
    async with empty_database.begin() as connection:
        await connection.run_sync(_to("0013_invocation_started_index", down=True))
        assert set((await connection.run_sync(_compression)).values()) == {""}
