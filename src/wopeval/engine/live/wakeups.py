"""Wake-ups across processes: one LISTEN connection feeding this process's notifier.

In queue mode the runs are written by worker processes, so an API process is
never told of their commits in memory. Every log-appending transaction sends
`NOTIFY wopeval_run, '<run id>'` (store `RunsRepo.notify`); PostgreSQL delivers it
only when, and after, that transaction commits, so a reader woken by it always
finds the rows. Each API process holds one connection that LISTENs and hands
every run id to its `Notifier`: the connection count grows with processes, not
with readers.

The connection can be lost (a restart of PostgreSQL, `pg_terminate_backend`).
Then every waiting reader is woken once, so each reads what it may have missed,
and the listener reconnects with a growing pause. Readers that wait meanwhile
still see new events through their timeout re-poll (`tail.RECHECK_SECONDS`, the
poll's `timeout`), only later.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from wopeval.engine.live.notifier import Notifier
from wopeval.store import RUN_CHANNEL
from wopeval.store.db import driver_url

log = logging.getLogger("wopeval.wakeups")

FIRST_RETRY_SECONDS = 0.2
MAX_RETRY_SECONDS = 5.0


@dataclass
class ListenerState:
    """What the health endpoint reports about the listener."""

    listening: bool = False
    connects: int = 0
    """Successful LISTENs so far: more than one means it reconnected."""
    last_error: str | None = None
    since: float | None = None
    """`time.time()` of the current connection's LISTEN."""


def libpq_dsn(database_url: str) -> str:
    """A libpq connection string for a SQLAlchemy `postgresql+psycopg://` URL."""
    url = driver_url(database_url).set(drivername="postgresql")
    return url.render_as_string(hide_password=False)


class Wakeups:
    """The LISTEN loop of one process; `start()` once, `stop()` at shutdown."""

    def __init__(self, database_url: str, notifier: Notifier) -> None:
        self._dsn = libpq_dsn(database_url)
        self._notifier = notifier
        self.state = ListenerState()
        self._task: asyncio.Task[None] | None = None
        self._connected = asyncio.Event()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="wakeups")

    async def wait_listening(self, seconds: float) -> bool:
        """Whether the first LISTEN is in place within `seconds`."""
        try:
            await asyncio.wait_for(self._connected.wait(), seconds)
        except TimeoutError:
            return False
        return True

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        # Imported by the listener, which only a PostgreSQL host starts: a SQLite host
        # (every CLI command's embedded one) need not load the driver.
        import psycopg

        pause = FIRST_RETRY_SECONDS
        while True:
            try:
                await self._listen()
            except (psycopg.Error, OSError) as exc:
                self.state.last_error = f"{type(exc).__name__}: {exc}".strip()
                log.warning("the run listener lost its connection (%s); reconnecting", exc)
            was_listening, self.state.listening = self.state.listening, False
            if was_listening:
                pause = FIRST_RETRY_SECONDS
                # Whatever was committed while nobody listened: every reader looks again.
                self._notifier.notify_all()
            await asyncio.sleep(pause)
            pause = min(pause * 2, MAX_RETRY_SECONDS)

    async def _listen(self) -> None:
        import psycopg

        async with await psycopg.AsyncConnection.connect(
            self._dsn, autocommit=True, application_name="wopeval listener"
        ) as connection:
            await connection.execute(f"LISTEN {RUN_CHANNEL}")
            self.state.listening = True
            self.state.connects += 1
            self.state.since = time.time()
            self._connected.set()
            if self.state.connects > 1:
                self._notifier.notify_all()
            # Kept trivial: a listener that stops reading holds back the server's queue.
            async for notification in connection.notifies():
                self._notifier.notify(notification.payload)
