"""What survives a restart: finished runs read back unchanged; active runs end `failed` once."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

import httpx
import pytest
from openwop_client import OpenwopClient
from openwop_client.types import CreateRunRequest
from openwop_client.wire_id import project_id

from _backends import Backend
from wopeval.api.auth import key_id
from wopeval.engine.live.notifier import Notifier
from wopeval.engine.runlog.log_writer import LogWriter
from wopeval.engine.runlog.steps import Step, now
from wopeval.settings import Settings
from wopeval.store import RunRecord, Store, next_created_seq
from wopeval.wire import events, ids, runs
from wopeval.wire.principal import Principal
from wopeval.wire.runs import RunKind, RunStatus

from ._gate import start_gated_run
from ._server import TENANT_A, ServerHandle, free_port
from ._support import (
    COUNTER_WORKFLOW,
    counter_inputs,
    read_counter,
    run_to_end,
    types_of,
    unique,
    wait_terminal,
)


def test_a_finished_run_reads_back_unchanged_after_a_restart(
    server: ServerHandle, http_a: httpx.Client
) -> None:
    client = server.client()
    key = unique("restart")
    run_id, _ = run_to_end(client, key)
    segment = project_id(run_id)
    snapshot = http_a.get(f"/runs/{segment}").content
    log = http_a.get(f"/runs/{segment}/events/poll").content
    listed = client.runs_list(limit=200).runs

    server.restart()

    with server.http() as http:
        assert http.get(f"/runs/{segment}").content == snapshot
        assert http.get(f"/runs/{segment}/events/poll").content == log
        assert read_counter(http, key) == 1
    assert client.runs_get(run_id).status == "completed"
    assert client.runs_list(limit=200).runs == listed
    streamed = list(client.runs_events(run_id, stream_mode="debug", timeout_seconds=30))
    assert types_of(streamed)[-1] == "run.completed"
    again, _ = run_to_end(client, key)
    assert again != run_id
    with server.http() as http:
        assert read_counter(http, key) == 2


_KILLED_EVAL = runs.CreateRunRequest(
    mode="eval", evalSuiteRef="killed.evals.suite@1.0.0", agentId="killed.agent"
)


async def _insert_active_run(
    url: str, tenant: str, api_key: str, kind: RunKind = RunKind.WORKFLOW
) -> str:
    """What a host killed mid-run leaves behind: a `running` row and its `run.started`."""
    owner = Principal(tenant=tenant, key_id=key_id(api_key)).owner()
    at = now()
    record = RunRecord(
        run_id=ids.mint_run_id(tenant),
        tenant=tenant,
        kind=kind,
        workflow_id=COUNTER_WORKFLOW,
        status=RunStatus.RUNNING,
        owner=owner,
        request=(
            runs.CreateRunRequest(workflowId=COUNTER_WORKFLOW, inputs=counter_inputs("killed"))
            if kind is RunKind.WORKFLOW
            else _KILLED_EVAL
        ),
        plan=None,
        created_at=at,
        started_at=at,
        completed_at=None,
        error=None,
        outputs=None,
        summary=None,
        suite_id=None,
        last_sequence=0,
        created_seq=next_created_seq(),
    )
    step = Step()
    step.emit(events.RunStarted(workflowId=COUNTER_WORKFLOW, owner=owner))
    store = await Store.open(url)
    try:
        await LogWriter(store, Notifier()).insert(record, step, None)
    finally:
        await store.close()
    return record.run_id


def test_a_run_left_active_by_a_killed_host_fails_once_at_the_next_start(
    server: ServerHandle,
) -> None:
    server.stop()
    try:
        run_id = asyncio.run(_insert_active_run(server.database_url, TENANT_A, server.key_a))
    finally:
        server.start()
    client = server.client()
    events_after = wait_terminal(client, run_id)
    assert types_of(events_after) == ["run.started", "run.failed"]
    assert [e.sequence for e in events_after] == [0, 1]
    snapshot = client.runs_get(run_id)
    assert snapshot.status == "failed"
    assert snapshot.error is not None
    assert snapshot.error.code == "host_restarted"
    assert snapshot.completedAt is not None

    server.restart()
    assert types_of(wait_terminal(client, run_id)) == ["run.started", "run.failed"]
    assert run_id in {run.runId for run in client.runs_list(limit=200, status="failed").runs}


def test_the_dashboard_shows_why_a_run_and_an_eval_run_failed(server: ServerHandle) -> None:
    server.stop()
    try:
        run_id, eval_id = (
            asyncio.run(_insert_active_run(server.database_url, TENANT_A, server.key_a, kind))
            for kind in (RunKind.WORKFLOW, RunKind.EVAL)
        )
    finally:
        server.start()
    for failed in (run_id, eval_id):
        wait_terminal(server.client(), failed)
    with httpx.Client(base_url=server.base_url, trust_env=False, timeout=60.0) as browser:
        signed_in = browser.post("/ui/sign-in", data={"key": server.key_a, "next": "/ui/runs"})
        assert signed_in.status_code == 303, signed_in.text
        for page in (f"/ui/runs/{project_id(run_id)}", f"/ui/evals/{project_id(eval_id)}"):
            shown = browser.get(page)
            assert shown.status_code == 200, shown.text
            assert '<span class="mono">host_restarted</span>' in shown.text


def test_a_run_active_when_the_host_stops_ends_failed_once(
    project_server: ServerHandle, tmp_path: Path
) -> None:
    gated = start_gated_run(project_server, tmp_path)
    project_server.restart()
    client = project_server.client()
    events_after = wait_terminal(client, gated.run_id)
    assert types_of(events_after).count("run.failed") == 1
    assert types_of(events_after)[-1] == "run.failed"
    assert "run.completed" not in types_of(events_after)
    snapshot = client.runs_get(gated.run_id)
    assert snapshot.status == "failed"
    assert snapshot.error is not None
    assert snapshot.error.code == "host_stopped"
    gated.release()
    project_server.restart()
    assert types_of(wait_terminal(client, gated.run_id)) == types_of(events_after)


def test_the_dev_key_is_generated_once_and_kept(
    backend: Backend, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    settings = Settings(
        data_dir=tmp_path / "data", database_url=backend.new_database(), port=free_port()
    )
    handle = ServerHandle(settings, backend=backend.name)
    handle.start()
    try:
        key_file = tmp_path / "data" / "dev-api-key"
        key = key_file.read_text().strip()
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
        assert key in capfd.readouterr().err
        first = OpenwopClient(handle.base_url, key)
        run_id = first.runs_create(
            CreateRunRequest(workflowId=COUNTER_WORKFLOW, inputs=counter_inputs("dev"))
        ).runId
        assert run_id.startswith("dev/")
        # Ended before the restart: a run the host stops under fails (`host_stopped`), and
        # whether this one had ended by then would be a race.
        assert types_of(wait_terminal(first, run_id))[-1] == "run.completed"

        handle.restart()
        assert key_file.read_text().strip() == key
        assert key not in capfd.readouterr().err
        client = OpenwopClient(handle.base_url, key)
        assert types_of(wait_terminal(client, run_id))[-1] == "run.completed"
    finally:
        handle.stop()
