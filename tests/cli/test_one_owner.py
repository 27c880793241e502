"""One database, one owner: no other process disturbs a live `wopeval serve`.

Each test holds a real `wopeval serve` subprocess with a run kept active by the
gate project, then starts another real process on the same data directory and
database. The live host's run must still be running afterwards, and complete
when released; its stored keys, and every other row, must be unchanged.
"""

from __future__ import annotations

import json
import secrets
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import httpx
import psycopg
import pytest
from psycopg import sql
from sqlalchemy.engine import make_url

from _backends import Backend, PostgresDatabases
from _processes import ServeOptions, ServeProcess
from e2e._support import table_rows, whole_store
from wopeval.cli._exit import DATABASE_OWNED
from wopeval.store.lease import ADVISORY_KEY

from ._serve import GATE_PROJECT, GatedRun, announcement
from ._support import run_cli

TENANT = "owner"
EMBEDDED_ERROR = 4


def _key() -> str:
    return "own_" + secrets.token_urlsafe(24)


@dataclass
class Live:
    serve: ServeProcess
    run: GatedRun
    http: httpx.Client


@contextmanager
def live_host(options: ServeOptions, tmp_path: Path, api_key: str | None) -> Iterator[Live]:
    """A live serve with one active run; `api_key` None means its generated dev key."""
    serve = ServeProcess(options, tmp_path / "live.log")
    try:
        serve.wait_up()
        key = api_key or (options.data_dir / "dev-api-key").read_text().strip()
        with serve.http(key) as http:
            gated = tmp_path / "gated"
            gated.mkdir()
            run = GatedRun.start(http, gated)
            try:
                yield Live(serve, run, http)
            finally:
                run.release()
    finally:
        serve.stop()


def _outcome_of(second: ServeProcess) -> int | None:
    code = second.outcome()
    if code is None:  # it started next to the live host: stop it before failing
        second.stop()
    return code


def _assert_undisturbed(live: Live, options: ServeOptions, before: object) -> None:
    assert whole_store(options.resolved_database_url()) == before
    assert live.run.status(live.http) == "running"
    live.run.release()
    assert live.run.wait_terminal(live.http)["status"] == "completed"


def test_a_second_serve_or_a_purge_on_an_owned_database_refuses_and_changes_nothing(
    backend: Backend, tmp_path: Path
) -> None:
    key = _key()
    options = ServeOptions(
        tmp_path / "data", backend.new_database(), (f"{TENANT}={key}",), GATE_PROJECT
    )
    with live_host(options, tmp_path, key) as live:
        before = whole_store(options.resolved_database_url())
        second = ServeProcess(
            replace(options, api_keys=(f"intruder={_key()}",)), tmp_path / "second.log"
        )
        assert _outcome_of(second) == DATABASE_OWNED, second.output()
        refusal = second.output()
        assert f"pid {live.serve.pid}" in refusal
        assert live.serve.url in refusal
        assert "Nothing was changed" in refusal
        announced = announcement(options.data_dir)
        assert announced is not None
        assert (announced["pid"], announced["url"]) == (live.serve.pid, live.serve.url)
        purge = run_cli("purge", "--older-than-days", "1", *options.embedded())
        assert purge.code == DATABASE_OWNED, purge.stdout + purge.stderr
        assert f"pid {live.serve.pid}" in purge.stderr
        _assert_undisturbed(live, options, before)


@pytest.mark.postgres
def test_a_serve_from_another_data_dir_on_an_owned_postgres_database_refuses(
    postgres_databases: PostgresDatabases, tmp_path: Path
) -> None:
    key = _key()
    options = ServeOptions(
        tmp_path / "data", postgres_databases.create(), (f"{TENANT}={key}",), GATE_PROJECT
    )
    with live_host(options, tmp_path, key) as live:
        before = whole_store(options.resolved_database_url())
        second = ServeProcess(replace(options, data_dir=tmp_path / "other"), tmp_path / "2.log")
        assert _outcome_of(second) == DATABASE_OWNED, second.output()
        # No announcement in that data dir: the pid comes from the lease's own session.
        assert f"pid {live.serve.pid}" in second.output()
        _assert_undisturbed(live, options, before)


def test_an_embedded_command_next_to_a_live_serve_talks_to_it(
    backend: Backend, tmp_path: Path
) -> None:
    options = ServeOptions(tmp_path / "data", backend.new_database(), (), GATE_PROJECT)
    with live_host(options, tmp_path, None) as live:
        key_file = (options.data_dir / "dev-api-key").read_text()
        before = whole_store(options.resolved_database_url())
        listed = run_cli("runs", "list", "--json", *options.embedded())
        assert listed.code == 0, listed.stderr
        runs = json.loads(listed.stdout)["runs"]
        assert [(run["runId"], run["status"]) for run in runs] == [(live.run.run_id, "running")]
        assert live.serve.url in listed.stderr
        assert (options.data_dir / "dev-api-key").read_text() == key_file
        _assert_undisturbed(live, options, before)


def test_an_embedded_command_without_a_key_for_the_live_serve_says_what_to_pass(
    backend: Backend, tmp_path: Path
) -> None:
    key = _key()
    options = ServeOptions(
        tmp_path / "data", backend.new_database(), (f"{TENANT}={key}",), GATE_PROJECT
    )
    with live_host(options, tmp_path, key) as live:
        before = whole_store(options.resolved_database_url())
        refused = run_cli("runs", "list", *options.embedded())
        assert refused.code == EMBEDDED_ERROR, refused.stdout + refused.stderr
        assert f"--url {live.serve.url} --api-key KEY" in refused.stderr
        assert whole_store(options.resolved_database_url()) == before

        listed = run_cli("runs", "list", "--json", "--api-key", key, *options.embedded())
        assert listed.code == 0, listed.stderr
        runs = json.loads(listed.stdout)["runs"]
        assert [(run["runId"], run["status"]) for run in runs] == [(live.run.run_id, "running")]
        assert not (options.data_dir / "dev-api-key").exists()
        _assert_undisturbed(live, options, before)


def test_an_embedded_host_reads_the_stored_keys_and_writes_none(
    backend: Backend, tmp_path: Path
) -> None:
    key = _key()
    options = ServeOptions(tmp_path / "data", backend.new_database(), (f"{TENANT}={key}",))
    serve = ServeProcess(options, tmp_path / "serve.log")
    serve.wait_up()
    try:
        with serve.http(key) as http:
            created = http.post("/runs", json={"workflowId": "conformance-noop"})
            assert created.status_code == 201, created.text
    finally:
        serve.stop()
    assert announcement(options.data_dir) is None, "a stopped serve withdraws its announcement"
    stored = table_rows(options.resolved_database_url(), "api_keys")
    assert [row["tenant"] for row in stored] == [TENANT]

    as_dev = run_cli("runs", "list", "--json", *options.embedded())
    assert as_dev.code == 0, as_dev.stderr
    assert json.loads(as_dev.stdout)["runs"] == []
    as_tenant = run_cli("runs", "list", "--json", "--api-key", key, *options.embedded())
    assert as_tenant.code == 0, as_tenant.stderr
    assert [run["runId"] for run in json.loads(as_tenant.stdout)["runs"]] == [
        created.json()["runId"]
    ]
    assert table_rows(options.resolved_database_url(), "api_keys") == stored
    assert not (options.data_dir / "dev-api-key").exists()


def _modes(directory: Path) -> dict[str, int]:
    return {path.name: stat.S_IMODE(path.stat().st_mode) for path in directory.iterdir()}


def test_the_data_dir_and_database_files_are_private_whatever_the_umask(
    backend: Backend, tmp_path: Path
) -> None:
    options = ServeOptions(tmp_path / "served", backend.new_database())
    serve = ServeProcess(options, tmp_path / "serve.log", umask=0)
    serve.wait_up()
    try:
        assert stat.S_IMODE(options.data_dir.stat().st_mode) == 0o700
        served = _modes(options.data_dir)
    finally:
        serve.stop()
    assert {"dev-api-key", "serve.json"} <= served.keys()
    if options.database_url is None:
        assert {"wopeval.db", "wopeval.db-wal", "wopeval.db-shm"} <= served.keys()
    assert set(served.values()) == {0o600}, served

    embedded = replace(options, data_dir=tmp_path / "embedded")
    listed = run_cli("runs", "list", *embedded.embedded(), umask=0)
    assert listed.code == 0, listed.stderr
    assert stat.S_IMODE(embedded.data_dir.stat().st_mode) == 0o700
    files = _modes(embedded.data_dir)
    if options.database_url is None:
        assert "wopeval.db" in files
    assert set(files.values()) <= {0o600}, files


# ── a lease lost while serving (PostgreSQL: the lease is a session) ──────────


def _lease_sessions(database_url: str, serve_pid: int) -> list[int]:
    """The backend pids of the sessions holding `serve_pid`'s lease."""
    with psycopg.connect(_libpq(database_url), autocommit=True) as connection:
        rows = connection.execute(
            "SELECT a.pid FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid"
            " WHERE a.application_name = %s AND l.locktype = 'advisory' AND l.granted",
            (f"wopeval owner pid={serve_pid}",),
        ).fetchall()
    return [pid for (pid,) in rows]


def _libpq(database_url: str) -> str:
    return make_url(database_url).set(drivername="postgresql").render_as_string(False)


def _watched_serve(url: str, tmp_path: Path, check_seconds: float) -> tuple[ServeProcess, str]:
    key = _key()
    options = ServeOptions(
        tmp_path / "data",
        url,
        (f"{TENANT}={key}",),
        env=(("WOPEVAL_LEASE_CHECK_SECONDS", str(check_seconds)),),
    )
    serve = ServeProcess(options, tmp_path / "serve.log")
    serve.wait_up()
    return serve, key


@pytest.mark.postgres
def test_a_serve_whose_lease_session_is_cut_takes_the_lease_again_and_keeps_serving(
    postgres_databases: PostgresDatabases, tmp_path: Path
) -> None:
    url = postgres_databases.create()
    serve, key = _watched_serve(url, tmp_path, 0.2)
    try:
        (first,) = _lease_sessions(url, serve.pid)
        with psycopg.connect(_libpq(url), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (first,))
        deadline = time.monotonic() + 30
        while not (again := _lease_sessions(url, serve.pid)) or again == [first]:
            assert time.monotonic() < deadline, serve.output()
            time.sleep(0.1)
        assert serve.outcome() is None
        with serve.http(key) as http:
            assert http.get("/host/wopeval/health").status_code == 200
    finally:
        serve.stop()


@pytest.mark.postgres
def test_a_serve_that_finds_its_lease_taken_exits_at_once(
    postgres_databases: PostgresDatabases, tmp_path: Path
) -> None:
    """Its session cut and the lease taken by another process before it could take it
    again (the serve kept out of the database meanwhile, since it tries again at once):
    the serve stops without a word more to the database (exit 5)."""
    url = postgres_databases.create()
    serve, _ = _watched_serve(url, tmp_path, 1.0)
    database = sql.Identifier(make_url(url).database or "")
    try:
        (session,) = _lease_sessions(url, serve.pid)
        admin_url = make_url(url).set(drivername="postgresql", database="postgres")
        with (
            psycopg.connect(_libpq(url), autocommit=True) as other_owner,
            psycopg.connect(admin_url.render_as_string(False), autocommit=True) as admin,
        ):
            admin.execute(
                sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS false").format(database)
            )
            try:
                other_owner.execute("SELECT pg_terminate_backend(%s)", (session,))
                other_owner.execute("SELECT pg_advisory_lock(%s)", (ADVISORY_KEY,))
            finally:
                admin.execute(
                    sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS true").format(database)
                )
            serve.process.wait(30)
        assert serve.outcome() == DATABASE_OWNED
        assert "lease is held by another process" in serve.output()
    finally:
        serve.stop()


@pytest.mark.postgres
def test_a_cut_lease_is_taken_again_before_another_serve_can_take_it(
    postgres_databases: PostgresDatabases, tmp_path: Path
) -> None:
    """Its session cut while a run is active, the serve takes its lease again at once, not
    at its next check (an hour away here): a second serve started right after is refused,
    and the live run completes untouched. Before, the second serve took the free lease,
    failed the live run as a dead owner's (start-up recovery) and served beside the first,
    which went on writing that run's log: two writers on one database."""
    key = _key()
    url = postgres_databases.create()
    options = ServeOptions(
        tmp_path / "data",
        url,
        (f"{TENANT}={key}",),
        GATE_PROJECT,
        env=(("WOPEVAL_LEASE_CHECK_SECONDS", "3600"),),
    )
    with live_host(options, tmp_path, key) as live:
        (session,) = _lease_sessions(url, live.serve.pid)
        with psycopg.connect(_libpq(url), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (session,))
        second = ServeProcess(replace(options, data_dir=tmp_path / "other"), tmp_path / "2.log")
        outcome = _outcome_of(second)
        assert outcome == DATABASE_OWNED, second.output()
        assert live.run.status(live.http) == "running"
        live.run.release()
        assert live.run.wait_terminal(live.http)["status"] == "completed"
        assert live.serve.outcome() is None
