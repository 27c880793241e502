"""PostgreSQL connections cut under a running host (a failover, a restart, a pooler or an
idle timeout ending backends, `pg_terminate_backend`): the host's pooled and kept
connections die while it holds them, and it must notice, not fail a caller's request.

Each test ends every backend of the host's own database (the server itself is shared and
stays up) at a moment it picks: between runs, or while a live call's tool waits at a gate,
after its call landed and before its result lands."""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from openwop_client.types import CreateRunRequest
from openwop_client.wire_id import project_id
from sqlalchemy.engine import make_url

from _backends import (
    Backend,
    PostgresDatabases,
    allow_connections,
    end_backends,
    terminate,
)
from _model_server import ModelServer
from wopeval.api.routes._mcp_server import NOT_RECORDED
from wopeval.api.routes.model_proxy import NOT_RECORDED as MODEL_NOT_RECORDED

from ._gate import DEADLINE_SECONDS
from ._loopback import LoopbackApi
from ._server import TENANT_A, ServerHandle, host_settings, running_host
from ._support import COUNTER_TOOL, table_rows, types_of, unique, wait_terminal
from .conftest import _project_host
from .evals._evals import golden, new_suite_id, publish, start_eval, suite, task
from .test_dashboard_http import _browser, _sign_in
from .test_run_control import STEPPER, Steps

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def pg_host(
    postgres_databases: PostgresDatabases,
    tmp_path_factory: pytest.TempPathFactory,
    loopback_api: LoopbackApi,
    credentials: dict[str, str],
) -> Iterator[ServerHandle]:
    """The project host on a database of its own, its tools given time to wait at gates."""
    with _project_host(
        Backend("postgres", postgres_databases),
        tmp_path_factory,
        loopback_api,
        credentials,
        120.0,
    ) as handle:
        yield handle


@pytest.fixture
def steps(tmp_path: Path) -> Iterator[Steps]:
    gates = Steps(tmp_path)
    try:
        yield gates
    finally:
        gates.release_all()


MCP_STEPPER = "e2e-mcp-stepper"
"""STEPPER's run by an agent outside the host, calling through its MCP endpoint."""


def _stepper(server: ServerHandle, steps: Steps, count: int, workflow: str = STEPPER) -> str:
    request = CreateRunRequest(
        workflowId=workflow, inputs={"steps": count, "dir": str(steps.directory)}
    )
    run_id: str = server.client().runs_create(request).runId
    return run_id


def _assert_whole(server: ServerHandle, run_id: str, calls: int) -> None:
    """The run completed with every call and result in its log and its records."""
    events = wait_terminal(server.client(), run_id)
    kinds = types_of(events)
    assert kinds[-1] == "run.completed", kinds
    assert kinds.count("agent.tool-called") == calls
    assert kinds.count("agent.tool-returned") == calls
    assert [event.sequence for event in events] == list(range(len(events)))
    recorded = table_rows(server.database_url, "tool_calls", run_id=run_id)
    assert [row["status"] for row in recorded] == ["ok"] * calls


def test_reads_and_new_runs_after_every_connection_was_cut(
    pg_host: ServerHandle, steps: Steps
) -> None:
    """Cut at once after a run, while the pool's connections are fresh (no idle ping due):
    the reads, a live run and an eval run that come next all succeed, each the first on
    its connection."""
    with pg_host.http() as http:
        steps.release_all()
        before = _stepper(pg_host, steps, 2)
        _assert_whole(pg_host, before, 2)
        ref = publish(
            http,
            suite(
                new_suite_id("lost"),
                [task("t1", [{"tool": COUNTER_TOOL, "args": {"op": "inc", "key": unique("k")}}])],
            ),
        )
        assert end_backends(pg_host.database_url) > 0
        answered = [
            http.get(f"/runs/{project_id(before)}"),
            http.get("/runs", params={"limit": 7}),
            http.get(f"/runs/{project_id(before)}/events", params={"afterSequence": 1}),
            http.get("/runs", params={"status": "completed", "limit": 3}),
        ]
        assert [response.status_code for response in answered] == [200] * 4, [
            response.text for response in answered
        ]
        assert end_backends(pg_host.database_url) > 0
        after = _stepper(pg_host, steps, 0)
        _assert_whole(pg_host, after, 0)
        assert end_backends(pg_host.database_url) > 0
        created = http.post(
            "/runs",
            json={"mode": "eval", "evalSuiteRef": ref, "agentId": "conformance.scripted-agent"},
        )
        assert created.status_code == 201, created.text
        events = wait_terminal(pg_host.client(), created.json()["runId"])
        assert types_of(events)[-1] == "run.completed", types_of(events)


def test_a_cut_while_a_tool_waits_lands_its_result(
    pg_host: ServerHandle, steps: Steps, caplog: pytest.LogCaptureFixture
) -> None:
    """Cut after call 0 landed and while its tool waits, then after call 1 landed: the log
    writer notices its kept connection ended before it writes the result's step, so no
    group fails (its steps written again one by one), and the run completes whole."""
    run_id = _stepper(pg_host, steps, 3)
    with caplog.at_level(logging.WARNING, logger="wopeval"):
        for index in range(3):
            steps.wait_entered(index)
            if index < 2:
                assert end_backends(pg_host.database_url) > 0
            steps.release(index)
        _assert_whole(pg_host, run_id, 3)
    assert [record.getMessage() for record in caplog.records] == []


def _not_landed(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The host's reports of steps that did not land, the database out of reach."""
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "wopeval.engine" and "did not land" in record.getMessage()
    ]


MCP_STEPPING_AGENT = "e2e.mcp-stepping-agent"


def _stepping_eval(server: ServerHandle, steps: Steps, count: int) -> str:
    """An eval run of one task, one trial, in which the outside agent makes `count` calls."""
    document = suite(
        new_suite_id("outage"),
        [
            {
                "taskId": "t1",
                "input": {"steps": count, "dir": str(steps.directory)},
                "expected": golden("stepped"),
            }
        ],
        target=MCP_STEPPING_AGENT,
    )
    with server.http() as http:
        ref = publish(http, document)
    return start_eval(server.client(), ref, MCP_STEPPING_AGENT)


@pytest.mark.parametrize("run", ["host-run", "outside", "outside-eval"])
def test_a_result_that_cannot_land_is_never_seen(
    pg_host: ServerHandle, steps: Steps, caplog: pytest.LogCaptureFixture, run: str
) -> None:
    """The database out of reach when a tool returns: its result does not land, so the
    agent never sees it (it would make call 1); the run ends `failed` once the database is
    back, saying why without the store's own message, not hung; the host serves other
    runs. An agent outside the host gets a JSON-RPC error for that call, no result, and
    for the next one, whose tool does not run; it goes on and ends, and its run still
    ends failed, not completed with a call whose result is missing; in an eval run too."""
    if run == "outside-eval":
        run_id = _stepping_eval(pg_host, steps, 2)
    else:
        run_id = _stepper(pg_host, steps, 2, MCP_STEPPER if run == "outside" else STEPPER)
    _out_of_reach_as_the_tool_returns(pg_host.database_url, steps, caplog)
    events = wait_terminal(pg_host.client(), run_id)
    assert types_of(events)[-1] == "run.failed"
    assert types_of(events).count("agent.tool-returned") == 0
    error = events[-1].payload["error"]
    assert error["code"] == "store_unreachable"
    # The store's own message (its address, its database) is the host's, not the tenant's.
    assert str(make_url(pg_host.database_url).database) not in str(error)
    (call,) = table_rows(pg_host.database_url, "tool_calls", run_id=run_id)
    assert (call["status"], call["result"]) == ("unknown", None)
    assert not steps.entered(1)
    if run != "host-run":
        for index in range(2):
            seen = json.loads((steps.directory / f"seen-{index}.json").read_text())
            assert "result" not in seen, seen
            assert seen["error"]["message"] == NOT_RECORDED, seen
    _assert_whole(pg_host, _stepper(pg_host, steps, 0), 0)


def _admin(server: ServerHandle, database: str | None = None) -> psycopg.Connection[Any]:
    """An administrator's connection to the server, on `database` (default `postgres`)."""
    url = make_url(server.database_url)
    admin = url.set(drivername="postgresql", database=database or "postgres")
    return psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True)


def _assert_unavailable(response: httpx.Response) -> None:
    """The envelope's `503 service_unavailable`, to be tried again: no 500, no store text."""
    assert response.status_code == 503, response.text
    assert response.json() == {
        "error": "service_unavailable",
        "message": "The host's database is out of reach; try again shortly.",
    }
    assert response.headers["Retry-After"] == "1"


def test_a_statement_cut_in_flight_is_answered_503_to_try_again(
    pg_host: ServerHandle, steps: Steps
) -> None:
    """A read whose statement is in flight when its backend is ended (it waits on a lock
    the test holds meanwhile), and a read and a write while the database refuses
    connections, answer `503 service_unavailable` with `Retry-After`; once it is back,
    the same succeed."""
    steps.release_all()
    run_id = _stepper(pg_host, steps, 0)
    _assert_whole(pg_host, run_id, 0)
    # A read no layer answers from memory (hot_reads.py keeps runs and their pages).
    annotations = f"/runs/{project_id(run_id)}/annotations"
    database = str(make_url(pg_host.database_url).database)
    with pg_host.http() as http, _admin(pg_host, database) as locker:
        locker.execute("BEGIN")
        locker.execute("LOCK TABLE runs IN ACCESS EXCLUSIVE MODE")
        with ThreadPoolExecutor(1) as pool:
            listed = pool.submit(http.get, annotations)
            with _admin(pg_host) as admin:
                terminate(admin, _lock_waiters(admin, database, []))
            _assert_unavailable(listed.result(timeout=DEADLINE_SECONDS))
        locker.execute("ROLLBACK")
        assert http.get(annotations).status_code == 200
        allow_connections(pg_host.database_url, False)
        try:
            assert end_backends(pg_host.database_url) > 0
            _assert_unavailable(http.get(annotations))
            created = http.post("/runs", json={"workflowId": STEPPER, "inputs": {"steps": 0}})
            _assert_unavailable(created)
        finally:
            allow_connections(pg_host.database_url, True)
        assert http.get(annotations).status_code == 200
    _assert_whole(pg_host, _stepper(pg_host, steps, 0), 0)


PROXY_PROJECT = '''\
"""The model-proxy outage project: one waiting tool, one agent that asks its model after."""

import json
from pathlib import Path

import httpx

from wopeval_e2e_project import waiting_tool  # noqa: F401 (the project's tool)


async def asking_agent(context):
    """Calls the waiting tool, whatever it answers (an agent that swallows a tool's error),
    then asks its model through its proxy and writes down the answer it got."""
    base = Path(context.input["dir"])
    try:
        await context.call_tool("outage:waits", {"dir": str(base)})
    except Exception as error:
        (base / "tool-error").write_text(type(error).__name__)
    async with httpx.AsyncClient() as http:
        answer = await http.post(
            context.openai_base_url + "/chat/completions",
            json={"model": "gpt-test-mini", "messages": [{"role": "user", "content": "after"}]},
            headers={"Authorization": "Bearer " + context.openai_api_key},
        )
    seen = {"status": answer.status_code, "body": answer.json()}
    (base / "model-answer.json").write_text(json.dumps(seen))
    return "asked"
'''
PROXY_MODULE = "wopeval_e2e_outage_proxy"
PROXY_KEY_ENV = "OUTAGE_TEST_MODEL_KEY"


@pytest.fixture(scope="module")
def proxy_host(
    pg_host: ServerHandle,
    postgres_databases: PostgresDatabases,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ServerHandle, ModelServer]]:
    """A host of its own whose agent's model is the stand-in model server, through the
    recording proxy; its waiting tool is the e2e project's (`pg_host` puts it on the path)."""
    directory = tmp_path_factory.mktemp("outage-proxy-project")
    (directory / f"{PROXY_MODULE}.py").write_text(PROXY_PROJECT)
    (directory / "workflows").mkdir()
    (directory / "workflows" / "outage-proxy.json").write_text(
        '{"id": "outage-proxy", "nodes": '
        '[{"id": "agent", "type": "core.agent", "agentId": "outage.asking-agent"}]}'
    )
    backend = Backend("postgres", postgres_databases)
    with ModelServer() as model, pytest.MonkeyPatch.context() as patch:
        patch.setenv(PROXY_KEY_ENV, "sk-outage-" + secrets.token_hex(12))
        model.script.add("after", [{"content": "the answer"}])
        (directory / "wopeval.toml").write_text(
            f"""workflows = ["workflows/*.json"]

[[tools]]
name = "outage:waits"
kind = "python"
callable = "{PROXY_MODULE}:waiting_tool"

[[agents]]
id = "outage.asking-agent"
lane = "python"
callable = "{PROXY_MODULE}:asking_agent"
base_url = "{model.base_url}"
api_key_env = "{PROXY_KEY_ENV}"
"""
        )
        settings = host_settings(backend, tmp_path_factory.mktemp("outage-proxy-host"))
        with running_host(settings.model_copy(update={"project": directory}), backend) as host:
            yield host, model


def test_no_model_answer_once_the_unit_cannot_land(
    proxy_host: tuple[ServerHandle, ModelServer],
    steps: Steps,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A step of the agent's unit did not land (the database out of reach when its tool
    returned), and the agent swallowed the error and asked its model: the proxy answers
    503 in the API's error shape, asks no upstream and records nothing, since no record of
    the unit can land any more; the run ends failed `store_unreachable`."""
    host, model = proxy_host
    request = CreateRunRequest(workflowId="outage-proxy", inputs={"dir": str(steps.directory)})
    run_id = host.client().runs_create(request).runId
    _out_of_reach_as_the_tool_returns(host.database_url, steps, caplog)
    events = wait_terminal(host.client(), run_id)
    assert types_of(events)[-1] == "run.failed"
    assert events[-1].payload["error"]["code"] == "store_unreachable"
    assert (steps.directory / "tool-error").read_text() == "StepNotLanded"
    seen = json.loads((steps.directory / "model-answer.json").read_text())
    assert seen == {
        "status": 503,
        "body": {
            "error": {
                "message": MODEL_NOT_RECORDED,
                "type": "api_error",
                "code": "store_unreachable",
            }
        },
    }
    assert model.script.requests_with("after") == []
    assert table_rows(host.database_url, "model_calls", run_id=run_id) == []


def _out_of_reach_as_the_tool_returns(
    database_url: str, steps: Steps, caplog: pytest.LogCaptureFixture
) -> None:
    """Once the run's first tool has entered: the database out of reach (its backends ended,
    new connections refused) as the tool returns, until the result's step has failed (its
    group, then alone on a new connection; the agent told instead of given the result) and
    the run's end has failed too (tried again until the database is back); then back."""
    steps.wait_entered(0)
    caplog.set_level(logging.WARNING, logger="wopeval")
    allow_connections(database_url, False)
    try:
        assert end_backends(database_url) > 0
        steps.release(0)
        deadline = time.monotonic() + DEADLINE_SECONDS
        while len(_not_landed(caplog)) < 2:
            assert time.monotonic() < deadline, _not_landed(caplog)
            time.sleep(0.02)
    finally:
        allow_connections(database_url, True)


def _control(http: httpx.Client, control: str, run_id: str, key: str) -> httpx.Response:
    """The run control `control` asked of `run_id`, under the Idempotency-Key `key`."""
    segment = project_id(run_id)
    headers = {"Idempotency-Key": key}
    if control == "bulk-cancel":
        return http.post("/runs:bulk-cancel", json={"runIds": [run_id]}, headers=headers)
    if control == "cancel":
        return http.post(f"/runs/{segment}/cancel", json={}, headers=headers)
    return http.post(f"/runs/{segment}:{control}", json={}, headers=headers)


def _lock_waiters(admin: psycopg.Connection[Any], database: str, gone: list[int]) -> list[int]:
    """The backends of `database` waiting on a lock, once one not in `gone` does."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    while True:
        found = admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'",
            (database,),
        )
        waiting = [pid for (pid,) in found if pid not in gone]
        if waiting:
            return waiting
        assert time.monotonic() < deadline, "no backend of the database waited on a lock"
        time.sleep(0.01)


def _wait_logged(caplog: pytest.LogCaptureFixture, text: str) -> None:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while not any(text in record.getMessage() for record in caplog.records):
        assert time.monotonic() < deadline, f"never logged: {text}"
        time.sleep(0.02)


def _answered_while_its_step_cannot_land(
    server: ServerHandle,
    run_id: str,
    send: Callable[[], httpx.Response],
    caplog: pytest.LogCaptureFixture,
    *,
    refused: bool,
) -> httpx.Response:
    """`send()`'s answer, a request whose route hands the log writer a step of `run_id`:
    the test holds the run's row locked, so the step's statement waits on it, and the
    backend that waits is ended, the step's group's and then the step's alone
    (`StepNotLanded`). With `refused`, the database refuses new connections instead of the
    second wait, until the route has tried to free its Idempotency-Key once; without, the
    key's table is held (its answer kept or the key freed once the test lets go). The
    route's own read of the run, before its step, is not held back (MVCC)."""
    database = str(make_url(server.database_url).database)
    caplog.set_level(logging.WARNING, logger="wopeval")
    with _admin(server, database) as locker, ThreadPoolExecutor(1) as pool:
        locker.execute("BEGIN")
        locker.execute("SELECT 1 FROM runs WHERE run_id = %s FOR UPDATE", (run_id,))
        answer = pool.submit(send)
        with _admin(server) as admin:
            group = _lock_waiters(admin, database, [])
            # Claimed before the step: what the route writes of its key after waits for it.
            locker.execute("LOCK TABLE idempotency IN SHARE MODE")
            if refused:
                allow_connections(server.database_url, False)
                try:
                    terminate(admin, group)
                    _wait_logged(caplog, "an idempotency key of")
                finally:
                    allow_connections(server.database_url, True)
            else:
                terminate(admin, group)
                terminate(admin, _lock_waiters(admin, database, group))
                _wait_logged(caplog, "did not land")
        locker.execute("ROLLBACK")
        return answer.result(timeout=DEADLINE_SECONDS)


@pytest.mark.parametrize("refused", [False, True], ids=["cut-twice", "refused"])
@pytest.mark.parametrize("control", ["cancel", "bulk-cancel", "pause", "resume"])
def test_a_control_whose_step_cannot_land_answers_503_and_lands_nothing(
    pg_host: ServerHandle,
    steps: Steps,
    caplog: pytest.LogCaptureFixture,
    control: str,
    refused: bool,
) -> None:
    """A cancel, pause or resume whose step cannot land (the database out of reach as it is
    written) answers `503 service_unavailable` with Retry-After, not 500 (a bulk cancel:
    that entry's error, the answer not kept for its key); the run is as it was, and the
    same request with the same Idempotency-Key then does the work (its key was freed, also
    when the database refused it a moment longer)."""
    run_id = _stepper(pg_host, steps, 1)
    steps.wait_entered(0)
    with pg_host.http() as http:
        if control == "resume":
            assert _control(http, "pause", run_id, unique("pause-key")).status_code == 202
        before = http.get(f"/runs/{project_id(run_id)}").json()["status"]
        key = unique("control-key")
        answer = _answered_while_its_step_cannot_land(
            pg_host, run_id, lambda: _control(http, control, run_id, key), caplog, refused=refused
        )
        if control == "bulk-cancel":
            assert answer.status_code == 200, answer.text
            (entry,) = answer.json()["results"]
            assert entry["ok"] is False
            assert entry["error"]["error"] == "service_unavailable"
        else:
            _assert_unavailable(answer)
        assert http.get(f"/runs/{project_id(run_id)}").json()["status"] == before
        again = _control(http, control, run_id, key)
        assert again.status_code in (200, 202), again.text
        assert "OpenWOP-Idempotent-Replay" not in again.headers
        if control == "bulk-cancel":
            assert again.json()["results"][0]["ok"] is True, again.text
        if control == "pause":
            assert _control(http, "resume", run_id, unique("resume-key")).status_code == 202
    steps.release_all()
    events = wait_terminal(pg_host.client(), run_id)
    kinds = types_of(events)
    assert [event.sequence for event in events] == list(range(len(events)))
    if control in ("cancel", "bulk-cancel"):
        assert kinds[-1] == "run.cancelled", kinds
    else:
        assert (kinds.count("run.paused"), kinds.count("run.resumed")) == (1, 1), kinds
        _assert_whole(pg_host, run_id, 1)


def test_the_dashboards_cancel_whose_step_cannot_land_is_a_503_page(
    pg_host: ServerHandle, steps: Steps, caplog: pytest.LogCaptureFixture
) -> None:
    """The dashboard's cancel, its step cut as the API's is: 503 `service_unavailable` as a
    page (the crash guard's answer, which the dashboard renders), not 500, with Retry-After
    and no store text; the run goes on and completes whole."""
    run_id = _stepper(pg_host, steps, 1)
    steps.wait_entered(0)
    with _browser(pg_host) as browser:
        csrf = _sign_in(browser, pg_host, TENANT_A)
        cancel = f"/ui/runs/{project_id(run_id)}/cancel"
        page = _answered_while_its_step_cannot_land(
            pg_host,
            run_id,
            lambda: browser.post(cancel, data={"csrf": csrf}),
            caplog,
            refused=False,
        )
    assert page.status_code == 503, page.text
    assert page.headers["content-type"].startswith("text/html")
    assert page.headers["Retry-After"] == "1"
    assert "service_unavailable" in page.text
    assert str(make_url(pg_host.database_url).database) not in page.text
    steps.release_all()
    _assert_whole(pg_host, run_id, 1)
