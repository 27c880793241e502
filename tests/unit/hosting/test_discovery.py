"""A command finds the serve that owns a data directory's SQLite file without taking its lease
(hosting/discovery.py), and only when the lease is held (store/lease.py's lock) by the live
process that announced itself there."""

from __future__ import annotations

import json
import os
from pathlib import Path

from wopeval.hosting.discovery import ANNOUNCEMENT, Owner, serving_owner
from wopeval.store import take_lease


def _announce(data_dir: Path, database: Path, pid: int) -> None:
    document = {"pid": pid, "url": "http://127.0.0.1:9", "database": str(database)}
    (data_dir / ANNOUNCEMENT).write_text(json.dumps(document))


def test_the_serve_holding_the_lease_is_found_and_the_probe_holds_nothing(tmp_path: Path) -> None:
    database = (tmp_path / "wopeval.db").resolve()
    _announce(tmp_path, database, os.getpid())
    assert serving_owner(tmp_path, database) is None  # no lock file yet: nobody holds it
    lease = take_lease(f"sqlite:///{database}")
    try:
        found = serving_owner(tmp_path, database)
        assert found == Owner(str(database), os.getpid(), "http://127.0.0.1:9")
        assert str(found).endswith(
            f"owned by a running `wopeval serve` (pid {os.getpid()}) at http://127.0.0.1:9"
        )
    finally:
        lease.release()
    # The lease let go, an announcement left behind names no owner; the probe took nothing.
    assert serving_owner(tmp_path, database) is None
    take_lease(f"sqlite:///{database}").release()


def test_a_held_lease_without_a_live_announcement_of_this_database_is_left_to_the_lease(
    tmp_path: Path,
) -> None:
    database = (tmp_path / "wopeval.db").resolve()
    lease = take_lease(f"sqlite:///{database}")
    try:
        assert serving_owner(tmp_path, database) is None  # held, but nobody announced
        _announce(tmp_path, tmp_path / "other.db", os.getpid())
        assert serving_owner(tmp_path, database) is None  # announced for another database
        dead = 2**22 + 1  # above the largest pid_max: no such process
        _announce(tmp_path, database, dead)
        assert serving_owner(tmp_path, database) is None  # its writer is gone
        _announce(tmp_path, database, os.getppid())
        assert serving_owner(tmp_path, database) is None  # alive, but not the lock's holder
    finally:
        lease.release()
