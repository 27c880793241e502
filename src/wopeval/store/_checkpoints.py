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
import sys
import threading
import traceback

log = logging.getLogger("wopeval.store")

STOP_WAIT_SECONDS = 5.0
"""How long a stopping store waits for a checkpoint in progress."""

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
        """End the thread, waiting for it a moment at most; blocking, so called from a
        thread of the caller's (the loop's own SQLite connections must go on meanwhile)."""
        self._stop.set()
        self._written.set()
        self._thread.join(STOP_WAIT_SECONDS)
        if self._thread.is_alive():
            # A daemon thread: it ends with the process, and what it did not copy the next
            # open reads back from the log. Where it waits is what a fix needs to know.
            frame = sys._current_frames().get(self._thread.ident or 0)
            where = "".join(traceback.format_stack(frame)) if frame is not None else ""
            log.warning("the WAL checkpoint thread did not stop; it waits in:\n%s", where)

    def _run(self) -> None:
        # No busy wait: a checkpoint that finds the log's locks taken gives up at once,
        # and the next write asks again.
        connection = sqlite3.connect(self._database, timeout=0)
        try:
            # Asked again each time round: a stop that lands after the wait below timed out
            # and before the clear has its wake-up cleared, and must not be waited past.
            while not self._stop.is_set():
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
        except sqlite3.Error as failed:
            # The next write asks again; a checkpoint that did not run loses nothing. One
            # that found a lock taken is expected now and then, and not worth a warning.
            if failed.sqlite_errorcode in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                log.debug("a WAL checkpoint found the log busy: %s", failed)
            else:
                log.warning("a WAL checkpoint failed", exc_info=True)
