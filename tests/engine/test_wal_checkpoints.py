"""SQLite's log is checkpointed by the store's own thread, never inside a commit on the loop
(store/_checkpoints.py)."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select, text

from wopeval.store import Store, _checkpoints, sqlite_url
from wopeval.store.tables import events

ROWS = 4_000
DOC = "x" * 2_000


def test_commits_leave_the_log_to_the_checkpoint_thread(tmp_path: Path) -> None:
    async def scenario() -> None:
        store = await Store.open(sqlite_url(tmp_path))
        database = tmp_path / "wopeval.db"
        try:
            async with store.transaction() as uow:
                (setting,) = (await uow.connection.execute(text("PRAGMA wal_autocheckpoint"))).one()
                assert setting == 0
            before = database.stat().st_size
            for start in range(0, ROWS, 500):
                async with store.transaction() as uow:
                    await uow.events.append(
                        [("r", sequence, "t", DOC) for sequence in range(start, start + 500)]
                    )
            # ~8 MB went to the log; the database file takes them once a checkpoint ran.
            deadline = time.monotonic() + 10
            while database.stat().st_size < before + ROWS * len(DOC):
                assert time.monotonic() < deadline, "no checkpoint copied the log back"
                await asyncio.sleep(0.05)
            async with store.reading() as uow:
                counted = await uow.connection.execute(select(func.count()).select_from(events))
                assert counted.scalar_one() == ROWS
        finally:
            await store.close()

    asyncio.run(scenario())


def test_a_checkpoint_that_does_not_end_never_holds_the_store_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    released = threading.Event()
    entered = threading.Event()

    def stuck(_connection: sqlite3.Connection) -> None:
        entered.set()
        released.wait(30)

    monkeypatch.setattr(_checkpoints.WalCheckpointer, "_checkpoint", staticmethod(stuck))
    monkeypatch.setattr(_checkpoints, "STOP_WAIT_SECONDS", 0.2)

    async def scenario() -> None:
        store = await Store.open(sqlite_url(tmp_path))
        async with store.transaction() as uow:
            await uow.events.append([("r", 0, "t", "{}")])
        assert await asyncio.to_thread(entered.wait, 10)
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        ticking = asyncio.create_task(tick())
        try:
            await asyncio.wait_for(store.close(), 10)
        finally:
            ticking.cancel()
        # The loop went on while the store waited for its thread.
        assert ticks > 5

    try:
        with caplog.at_level(logging.WARNING, logger="wopeval.store"):
            asyncio.run(scenario())
    finally:
        released.set()
    (warning,) = [r for r in caplog.records if "did not stop" in r.getMessage()]
    assert "stuck" in warning.getMessage()


class _StopAsTheWaitTimesOut(threading.Event):
    """The checkpointer's stop flag, whose first timed wait times out just as a `stop()`
    lands: the flag set and the thread woken, before the thread clears its wake-up."""

    def __init__(self, checkpointer: _checkpoints.WalCheckpointer) -> None:
        super().__init__()
        self._checkpointer = checkpointer
        self._landed = False

    def wait(self, timeout: float | None = None) -> bool:
        stopped = super().wait(timeout)
        if not stopped and not self._landed:
            self._landed = True
            self.set()
            self._checkpointer._written.set()
        return stopped


def test_a_stop_that_lands_as_the_thread_wakes_still_ends_it(tmp_path: Path) -> None:
    database = tmp_path / "wopeval.db"
    sqlite3.connect(database).close()
    checkpointer = _checkpoints.WalCheckpointer(str(database))
    # The thread waits for a write before it reads its stop flag: this one is read.
    checkpointer._stop = _StopAsTheWaitTimesOut(checkpointer)
    checkpointer.written()
    checkpointer._thread.join(_checkpoints.STOP_WAIT_SECONDS)
    assert not checkpointer._thread.is_alive(), "the thread waits past its stop"
