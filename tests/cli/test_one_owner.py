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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import httpx
import pytest

from _backends import Backend, PostgresDatabases
from _processes import ServeOptions, ServeProcess
from e2e._support import table_rows, whole_store
from wopeval.cli._exit import DATABASE_OWNED

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
