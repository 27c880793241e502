"""Who owns a data directory's database, and how a refused process finds the owner.

`claim(settings)` takes the database's lease (`store/lease.py`) before
anything touches the store; a refused caller gets `DatabaseOwned` (or
`DatabaseUnreachable`, with the database's message) and has changed nothing.
The data directory is created 0700 (`private_directory`).
A host that serves announces itself in `DATA_DIR/serve.json` (0600): pid, URL
and database, written once it listens and withdrawn when it stops, so a CLI
command on the same data directory can talk to it instead of starting a host
of its own (`discovery` finds it so, without loading the store). A host that
holds the lease watches it (`watch_lease`), and exits when another process has
taken it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
from dataclasses import asdict
from pathlib import Path

from wopeval.hosting.discovery import (
    ANNOUNCEMENT,
    Announcement,
    Owner,
    alive,
    live_announcement,
    read_announcement,
    remove_announcement,
)
from wopeval.hosting.exits import DATABASE_OWNED_EXIT
from wopeval.settings import Settings
from wopeval.store import DatabaseUnreachable, Lease, LeaseHeld, database_name, take_lease

__all__ = [
    "ANNOUNCEMENT",
    "DATABASE_OWNED_EXIT",
    "Announcement",
    "DatabaseOwned",
    "DatabaseUnreachable",
    "Lease",
    "announce",
    "claim",
    "private_directory",
    "watch_lease",
    "withdraw",
]

log = logging.getLogger("wopeval.host")


class DatabaseOwned(LeaseHeld):
    """The database is owned by another live process; nothing was touched.

    A `LeaseHeld` that names the owner as its announcement does, so the app reports it
    as the expected start-up failure it is (`api/startup.py`)."""

    def __init__(self, database: str, pid: int | None, url: str | None) -> None:
        super().__init__(database, pid)
        self.url = url
        """Where the owner serves, when it is a `wopeval serve` that announced itself."""

    @property
    def owner(self) -> Owner:
        return Owner(self.database, self.pid, self.url)

    def __str__(self) -> str:
        return str(self.owner)


def claim(settings: Settings) -> Lease:
    """Take the lease of the settings' database, or raise `DatabaseOwned`."""
    if settings.database_url is None:
        # The default database, and so its lock file, live in the data directory.
        private_directory(settings.data_dir)
    url = settings.resolved_database_url()
    try:
        lease = take_lease(url)
    except LeaseHeld as held:
        announced = _announcement_of(settings, held.pid)
        raise DatabaseOwned(
            held.database,
            announced.pid if announced else held.pid,
            announced.url if announced else None,
        ) from None
    stale = read_announcement(settings.data_dir)
    if stale is not None and (stale.database == database_name(url) or not alive(stale.pid)):
        # Its writer no longer holds the lease: it was killed before it could withdraw it.
        remove_announcement(settings.data_dir)
    return lease


def announce(settings: Settings, url: str) -> None:
    """Write `serve.json` for this process (atomically, 0600); only the lease holder may."""
    announcement = Announcement(os.getpid(), url, database_name(settings.resolved_database_url()))
    target = settings.data_dir / ANNOUNCEMENT
    draft = target.with_name(f".{ANNOUNCEMENT}.{os.getpid()}")
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(asdict(announcement), handle)
    os.replace(draft, target)


def withdraw(settings: Settings) -> None:
    """Remove this process's announcement (another process's stays)."""
    current = read_announcement(settings.data_dir)
    if current is not None and current.pid == os.getpid():
        remove_announcement(settings.data_dir)


async def watch_lease(lease: Lease, interval: float) -> None:
    """Stop the process at once when another process holds its database's lease.

    A PostgreSQL lease lives in a session, which a database restart, a network drop or
    an administrator can end; the lease is then taken again on a new session. When
    another process took it first, that process owns the database (and has failed the
    runs it found active): this one exits without writing another row, as if killed,
    so two owners never run one database. The lease is checked every `interval`, and at
    once when its session's socket says the server may have ended it (`Lease.watched`), so
    the lock is taken again before another process could start and take it.
    """
    while True:
        await _lost_or_due(lease.watched(), interval)
        if not await asyncio.to_thread(lease.keep):
            log.critical(
                "the database's lease is held by another process now: stopping at once"
                " (exit %d) so that only one process runs this database",
                DATABASE_OWNED_EXIT,
            )
            sys.stderr.flush()
            os._exit(DATABASE_OWNED_EXIT)


async def _lost_or_due(watched: int | None, interval: float) -> None:
    """Wait `interval` seconds, or less if `watched` turns readable."""
    if watched is None:
        await asyncio.sleep(interval)
        return
    loop = asyncio.get_running_loop()
    readable = asyncio.Event()
    loop.add_reader(watched, readable.set)
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(readable.wait(), interval)
    finally:
        # Before `keep()` reads or closes the socket in its thread.
        loop.remove_reader(watched)


def private_directory(path: Path) -> None:
    """Create `path` readable by its owner only (0700, whatever the umask); an existing
    directory is the user's and keeps its mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        return
    path.chmod(0o700)


def _announcement_of(settings: Settings, pid: int | None) -> Announcement | None:
    """The live announcement of this database's owner in this data directory, if any."""
    database = database_name(settings.resolved_database_url())
    return live_announcement(settings.data_dir, database, pid)
