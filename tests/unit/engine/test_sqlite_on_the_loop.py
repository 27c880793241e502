"""SQLite runs on the event loop (store/_sqlite_inline.py), and its writers take turns.

A statement through the store runs in the loop's own thread (no driver thread to hand it
to); a second writer waits for the first on the store's lock, never inside SQLite, so the
loop keeps serving while a transaction is open and both transactions land.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from sqlalchemy import event, text

from wopeval.store import Store, create_engine

from ._store import open_store


async def test_a_statement_runs_in_the_event_loops_thread(tmp_path: Path) -> None:
    async with open_store(tmp_path) as store:
        # A SQL function runs in the thread that steps its statement.
        def register(connection: Any, _record: Any) -> None:
            connection.create_function("thread_of_call", 0, lambda: threading.get_ident())

        event.listen(store.engine.sync_engine, "connect", register)
        await store.engine.dispose()  # new connections carry the function
        async with store.reading() as uow:
            stepped_in = (await uow.connection.execute(text("SELECT thread_of_call()"))).scalar()
        assert stepped_in == threading.get_ident()


async def _write_counter(store: Store, name: str, hold: asyncio.Event | None) -> None:
    async with store.transaction() as uow:
        await uow.connection.execute(
            text("INSERT INTO scratch (name) VALUES (:name)"), {"name": name}
        )
        if hold is not None:
            # The first writer holds SQLite's write lock across an await.
            await hold.wait()


async def test_a_second_writer_waits_on_the_lock_and_the_loop_keeps_serving(
    tmp_path: Path,
) -> None:
    async with open_store(tmp_path) as store:
        async with store.transaction() as uow:
            await uow.connection.execute(text("CREATE TABLE scratch (name TEXT)"))
        release = asyncio.Event()
        first = asyncio.create_task(_write_counter(store, "first", release))
        await asyncio.sleep(0.05)
        second = asyncio.create_task(_write_counter(store, "second", None))
        ticks = 0
        for _ in range(10):
            await asyncio.sleep(0.01)
            ticks += 1
        # Had the second writer waited inside SQLite (its busy timeout is 30 s), the loop
        # would have stopped with it, and the first writer could never have committed.
        assert ticks == 10
        assert not second.done()
        release.set()
        await asyncio.wait_for(asyncio.gather(first, second), timeout=5)
        async with store.reading() as uow:
            names = (await uow.connection.execute(text("SELECT name FROM scratch"))).scalars()
            assert list(names) == ["first", "second"]


async def test_every_sqlite_url_gets_the_loop_driver(tmp_path: Path) -> None:
    # Configurations written for the aiosqlite driver keep working.
    for url in (f"sqlite+aiosqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"):
        engine = create_engine(url)
        try:
            assert engine.dialect.driver == "wopeval"
        finally:
            await engine.dispose()
