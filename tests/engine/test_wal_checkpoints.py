"""SQLite's log is checkpointed by the store's own thread, never inside a commit on the loop
(store/_checkpoints.py)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from sqlalchemy import text

from wopeval.store import Store, sqlite_url

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
                        [
                            {"run_id": "r", "sequence": sequence, "type": "t", "doc": DOC}
                            for sequence in range(start, start + 500)
                        ]
                    )
            # ~8 MB went to the log; the database file takes them once a checkpoint ran.
            deadline = time.monotonic() + 10
            while database.stat().st_size < before + ROWS * len(DOC):
                assert time.monotonic() < deadline, "no checkpoint copied the log back"
                await asyncio.sleep(0.05)
            async with store.reading() as uow:
                assert len(await uow.events.all_docs("r")) == ROWS
        finally:
            await store.close()

    asyncio.run(scenario())
