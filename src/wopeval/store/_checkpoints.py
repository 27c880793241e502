"""SQLite's WAL checkpoints, run by a thread of their own instead of inside a commit.

By default SQLite copies the write-ahead log back into the database file (and syncs
the file) inside whichever commit takes the log past 1,000 pages. The store's commits
run on the event loop (store/_sqlite_inline.py), so that copy stalled every run
waiting on the loop: on the eval bench, a tenth of its time. The store's connections
turn the automatic checkpoint off (db.py), and this thread checkpoints instead, a
moment after writes, on its own connection and its own core (`sqlite3` lets go of
the GIL while it copies). A PASSIVE checkpoint never waits for a reader or the writer;
what it cannot copy yet, the next one does. A crash loses nothing: what a commit wrote
is in the log, which SQLite reads back at the next open.
"""

from __future__ import annotations

import logging
import sqlite3
import threading

log = logging.getLogger("wopeval.store")

CHECKPOINT_EVERY_SECONDS = 0.25
"""How long after a write the log is copied back at the latest: the log grows by at most
what the host writes in that time."""


class WalCheckpointer:
    def __init__(self, database: str) -> None:
        self._database = database
        self._written = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="wopeval-wal-checkpoints", daemon=True
        )
        self._thread.start()

    def written(self) -> None:
        """A transaction committed: checkpoint soon."""
        self._written.set()

    def stop(self) -> None:
        self._stop.set()
        self._written.set()
        self._thread.join()

    def _run(self) -> None:
        connection = sqlite3.connect(self._database, timeout=30)
        try:
            while True:
                self._written.wait()
                # Let the writes of the next moment join this checkpoint.
                if self._stop.wait(CHECKPOINT_EVERY_SECONDS):
                    return
                self._written.clear()
                self._checkpoint(connection)
        finally:
            connection.close()

    @staticmethod
    def _checkpoint(connection: sqlite3.Connection) -> None:
        try:
            connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error:
            # The next write asks again; a checkpoint that fails loses nothing.
            log.warning("a WAL checkpoint failed", exc_info=True)
