"""MCP servers as tool sources, behind the one tool boundary, over stdio and Streamable HTTP.

The counting server writes down every call it receives: a production run's
calls reach it once each, recorded as executed; an eval replaying that run
through `fixtureRuns` reaches it zero times, and so does a drifted call (a
miss). Its credential is added at egress and found nowhere else. Failures —
an `isError` result, a crash, a timeout, a server that went away — are tool
errors with clear codes, and the next call works.
"""

from __future__ import annotations

import json
import logging
import os
import signal
from typing import Any

import pytest
from openwop_client.types import CreateRunRequest

from .._server import ServerHandle
from .._support import COUNTER_WORKFLOW, table_rows, unique, wait_terminal, whole_store
from ..evals._evals import golden, live_calls, new_suite_id, publish, run_eval, suite
from .conftest import CallLog, HttpMcpServer, token_hash

SERVERS = ["count", "count-http"]


def call(tool: str, **args: Any) -> dict[str, Any]:
    return {"tool": tool, "args": args}


def produce(host: ServerHandle, *calls: dict[str, Any]) -> tuple[str, list[Any]]:
    """A production run of the scripted agent making `calls`, then deciding "done"."""
    inputs = {"calls": list(calls), "answer": "done"}
    run_id: str = (
        host.client()
        .runs_create(CreateRunRequest(workflowId=COUNTER_WORKFLOW, inputs=inputs))
        .runId
    )
    events = wait_terminal(host.client(), run_id)
    assert events[-1].type == "run.completed"
    return run_id, events


def returned(events: list[Any]) -> list[dict[str, Any]]:
    return [e.payload for e in events if e.type == "agent.tool-returned"]


def decision(events: list[Any]) -> Any:
    return next(e.payload["decision"] for e in events if e.type == "agent.decided")


def replay_suite(host: ServerHandle, calls: list[dict[str, Any]], answer: Any = "done") -> str:
    task = {
        "taskId": "replay",
        "input": {"calls": calls, "answer": answer},
        "expected": golden(answer),
    }
    with host.http() as http:
        return publish(http, suite(new_suite_id("mcp"), [task]))


@pytest.mark.parametrize("server", SERVERS)
def test_a_production_run_is_recorded_as_executed_and_the_credential_stays_at_egress(
    mcp_host: ServerHandle,
    call_log: CallLog,
    mcp_secret: str,
    server: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    key = unique("key")
    before = call_log.count()
    with caplog.at_level(logging.DEBUG):
        run_id, events = produce(mcp_host, call(f"{server}:lookup", key=key))

    received = call_log.lines()[before:]
    assert [(line["tool"], line["arguments"]) for line in received] == [("lookup", {"key": key})]
    injected = mcp_secret if server == "count" else f"Bearer {mcp_secret}"
    assert received[0]["token"] == token_hash(injected)
    (answer,) = returned(events)
    assert answer["status"] == "ok"
    assert answer["outcome"]["structuredContent"] == {"key": key, "length": len(key)}
    (row,) = table_rows(mcp_host.database_url, "tool_calls", run_id=run_id)
    assert (row["tool"], row["status"], row["served_by"]) == (f"{server}:lookup", "ok", "live")
    assert row["inputs"] == {"key": key}
    assert row["result"]["structuredContent"] == {"key": key, "length": len(key)}

    assert mcp_secret not in json.dumps([e.payload for e in events])
    assert mcp_secret not in json.dumps(whole_store(mcp_host.database_url), default=str)
    assert mcp_secret not in caplog.text


@pytest.mark.parametrize("server", SERVERS)
def test_an_eval_replays_the_recording_without_calling_the_server_and_a_drift_is_a_miss(
    mcp_host: ServerHandle, call_log: CallLog, server: str
) -> None:
    key = unique("key")
    calls = [call(f"{server}:lookup", key=key), call(f"{server}:lookup", key=key + "-2")]
    source, _ = produce(mcp_host, *calls)
    client = mcp_host.client()
    with mcp_host.http() as http:
        before = call_log.count()
        replayed = run_eval(client, http, replay_suite(mcp_host, calls),
                            fixtureRuns={"replay": source})  # fmt: skip
        assert replayed.summary["passed"] is True
        assert replayed.summary["fixtureMissCount"] == 0
        assert live_calls(http, replayed.run_id) == 0
        outcomes = [p["outcome"]["structuredContent"] for p in returned(replayed.events)]
        assert outcomes == [{"key": key, "length": len(key)},
                            {"key": key + "-2", "length": len(key) + 2}]  # fmt: skip

        drifted = [calls[0], call(f"{server}:lookup", key=key + "-changed")]
        missed = run_eval(client, http, replay_suite(mcp_host, drifted),
                          fixtureRuns={"replay": source})  # fmt: skip
        assert missed.summary["passed"] is False
        assert missed.summary["fixtureMissCount"] == 1
        assert live_calls(http, missed.run_id) == 0
    assert call_log.count() == before, "a replay reached the MCP server"


@pytest.mark.parametrize("server", SERVERS)
def test_an_is_error_result_is_a_tool_error_that_replays(
    mcp_host: ServerHandle, call_log: CallLog, server: str
) -> None:
    reason = unique("no")
    source, events = produce(mcp_host, call(f"{server}:refuse", reason=reason))
    (failed,) = returned(events)
    assert failed["status"] == "error"
    assert failed["error"]["code"] == "mcp_tool_error"
    assert reason in failed["error"]["message"]
    assert decision(events) == {"error": "mcp_tool_error"}
    (row,) = table_rows(mcp_host.database_url, "tool_calls", run_id=source)
    assert row["status"] == "error"
    assert row["error"]["details"]["content"][0]["type"] == "text"

    before = call_log.count()
    calls = [call(f"{server}:refuse", reason=reason)]
    ref = replay_suite(mcp_host, calls, answer={"error": "mcp_tool_error"})
    with mcp_host.http() as http:
        replayed = run_eval(mcp_host.client(), http, ref, fixtureRuns={"replay": source})
        assert replayed.summary["passed"] is True
        assert live_calls(http, replayed.run_id) == 0
    (served,) = returned(replayed.events)
    assert (served["status"], served["error"]["code"]) == ("error", "mcp_tool_error")
    assert served["error"]["message"] == failed["error"]["message"]
    assert call_log.count() == before


def _lookup_answer(host: ServerHandle, server: str) -> dict[str, Any]:
    _, events = produce(host, call(f"{server}:lookup", key=unique("k")))
    (answer,) = returned(events)
    return answer


def test_a_stdio_server_runs_in_the_host_session_leading_its_own_process_group(
    mcp_host: ServerHandle, call_log: CallLog
) -> None:
    """In the host's session, so on Linux it shares the host's scheduling group (a server in
    a session of its own cost the host ~10 ms of run-queue wait per call, bench/README.md);
    leading its own process group, so closing the connection can kill its whole tree."""
    assert _lookup_answer(mcp_host, "count")["status"] == "ok"
    pid = call_log.lines()[-1]["pid"]
    assert os.getsid(pid) == os.getsid(0), "the host (this process) and its server share a session"
    assert os.getpgid(pid) == pid, "the server leads a process group of its own"


def test_a_killed_stdio_server_is_a_tool_error_and_the_next_call_works(
    mcp_host: ServerHandle, call_log: CallLog
) -> None:
    assert _lookup_answer(mcp_host, "count")["status"] == "ok"
    pid = call_log.lines()[-1]["pid"]
    os.kill(pid, signal.SIGKILL)

    lost = _lookup_answer(mcp_host, "count")
    assert (lost["status"], lost["error"]["code"]) == ("error", "mcp_connection_lost")
    assert _lookup_answer(mcp_host, "count")["status"] == "ok"
    assert call_log.lines()[-1]["pid"] != pid, "the next call reached a new server process"


@pytest.mark.parametrize(
    ("failing", "code"),
    [(call("count:crash"), "mcp_connection_lost"),
     (call("count:sleep", seconds=30), "tool_timeout")],
    ids=["crash-mid-call", "timeout"],
)  # fmt: skip
def test_a_crash_or_timeout_mid_call_is_a_tool_error_and_the_server_restarts(
    mcp_host: ServerHandle, call_log: CallLog, failing: dict[str, Any], code: str
) -> None:
    run_id, events = produce(mcp_host, failing)
    pid = call_log.lines()[-1]["pid"]
    (failed,) = returned(events)
    assert (failed["status"], failed["error"]["code"]) == ("error", code)
    assert decision(events) == {"error": code}
    assert mcp_host.client().runs_get(run_id).status == "completed"
    assert _lookup_answer(mcp_host, "count")["status"] == "ok"
    assert call_log.lines()[-1]["pid"] != pid


def test_an_http_server_that_went_away_is_a_tool_error_and_the_next_call_works(
    mcp_host: ServerHandle, http_mcp_server: HttpMcpServer
) -> None:
    assert _lookup_answer(mcp_host, "count-http")["status"] == "ok"
    http_mcp_server.stop()
    try:
        gone = _lookup_answer(mcp_host, "count-http")
    finally:
        http_mcp_server.start()
    assert gone["status"] == "error"
    assert gone["error"]["code"] == "mcp_connection_lost"
    assert _lookup_answer(mcp_host, "count-http")["status"] == "ok"


@pytest.mark.parametrize(
    ("failing", "code"),
    [(call("count-http:crash"), "mcp_connection_lost"),
     (call("count-http:sleep", seconds=30), "tool_timeout")],
    ids=["crash-mid-call", "timeout"],
)  # fmt: skip
def test_an_http_server_dropping_or_outlasting_a_call_is_a_tool_error_and_the_next_call_works(
    mcp_host: ServerHandle, http_mcp_server: HttpMcpServer, failing: dict[str, Any], code: str
) -> None:
    """Over Streamable HTTP: the server's process exits mid-call (its connection dropped
    under the call), or the call outlasts its timeout while the server lives on."""
    assert _lookup_answer(mcp_host, "count-http")["status"] == "ok"
    try:
        run_id, events = produce(mcp_host, failing)
    finally:
        if failing["tool"] == "count-http:crash":
            http_mcp_server.stop()  # reaped
            http_mcp_server.start()
    (failed,) = returned(events)
    assert (failed["status"], failed["error"]["code"]) == ("error", code)
    assert mcp_host.client().runs_get(run_id).status == "completed"
    assert _lookup_answer(mcp_host, "count-http")["status"] == "ok"
