"""What a CLI command reads to find the host that owns a data directory, with no server stack.

A `wopeval serve` announces itself in `DATA_DIR/serve.json` (`ownership.announce`)
and keeps its dev key in `DATA_DIR/dev-api-key` (`credentials`). A command on
that data directory finds it here from those files and the database's lock,
before it would take the lease itself: finding the owner loads neither the
store nor SQLAlchemy (issue 28: a listing through a serving data directory in
≤ 0.5 s). This module imports only the standard library.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from dataclasses import dataclass
from pathlib import Path

ANNOUNCEMENT = "serve.json"
DEV_TENANT = "dev"
DEV_KEY_FILE = "dev-api-key"


@dataclass(frozen=True)
class Announcement:
    """What a serving host writes in its data directory."""

    pid: int
    url: str
    database: str
    """The database it owns, named as `database_name` names it."""


@dataclass(frozen=True)
class Owner:
    """Who owns a database: a live process, and where it serves when it announced itself."""

    database: str
    pid: int | None
    url: str | None
    """Where the owner serves, when it is a `wopeval serve` that announced itself."""

    def __str__(self) -> str:
        pid_text = f"pid {self.pid}" if self.pid is not None else "pid unknown"
        if self.url is not None:
            holder = f"a running `wopeval serve` ({pid_text}) at {self.url}"
        else:
            holder = f"another wopeval process ({pid_text}, no URL announced)"
        return f"the database {self.database} is owned by {holder}"


def serving_owner(data_dir: Path, database: Path) -> Owner | None:
    """The live `wopeval serve` that owns the SQLite file `database`, found without taking
    its lease: the lease's lock is held (`store/lease.py`: an exclusive flock on
    `<database>.lock`, the file holding its owner's pid), and `data_dir` holds a live
    announcement naming that database, by that pid when the lock file names one.

    None when the lock is free, or when its holder did not announce itself here: the caller
    then takes the lease as usual, which tells those cases apart.
    """
    held, holder = _lock_holder(database.with_name(database.name + ".lock"))
    found = live_announcement(data_dir, str(database), holder) if held else None
    return None if found is None else Owner(found.database, found.pid, found.url)


def live_announcement(data_dir: Path, database: str, pid: int | None) -> Announcement | None:
    """The announcement in `data_dir` of `database`'s owner, if its process is alive and,
    when the owner's `pid` is known, is that process."""
    found = read_announcement(data_dir)
    if found is None or found.database != database or not alive(found.pid):
        return None
    if pid is not None and pid != found.pid:
        return None
    return found


def _lock_holder(lock_file: Path) -> tuple[bool, int | None]:
    """Whether another process holds an exclusive flock on `lock_file` now, and the pid the
    file names; a shared probe, let go at once, so it can never hold the lease itself."""
    try:
        fd = os.open(lock_file, os.O_RDONLY)
    except OSError:  # none yet, or not ours to read: taking the lease will say
        return False, None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        digits = os.read(fd, 32).decode(errors="replace").strip()
        return True, int(digits) if digits.isdigit() else None
    finally:
        os.close(fd)  # closing the descriptor lets go of the probe's shared lock
    return False, None


def read_announcement(data_dir: Path) -> Announcement | None:
    try:
        document = json.loads((data_dir / ANNOUNCEMENT).read_text(encoding="utf-8"))
        return Announcement(
            pid=int(document["pid"]), url=str(document["url"]), database=str(document["database"])
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def remove_announcement(data_dir: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        (data_dir / ANNOUNCEMENT).unlink()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, and someone else's
        return True
    return True
