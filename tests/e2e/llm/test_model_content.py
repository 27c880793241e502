"""What of a model exchange leaves the host: the agent's `wireContent`, and erasure.

With `hash` a task detail keeps each exchange's shape — tokens, latency,
cost, `requestHash` — and never its messages or answer; erasing a run's tool
content erases its model exchanges' content too (their messages carry the
tools' results), in the record and in the trial details, and so does retention.
"""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime, timedelta

from openwop_client.wire_id import project_id

from _backends import Backend
from _processes import WOPEVAL

from .._support import table_rows, unique
from ..evals._evals import golden, new_suite_id, publish, run_eval, set_completed_at, suite
from .conftest import LlmHost
from .test_openai_lane import refund_turns, task_detail, user_message


def _refund_eval(llm_host: LlmHost, agent: str) -> tuple[str, str]:
    order = unique("H")
    inputs = {"question": f"Refund order {order}"}
    llm_host.server.script.add(user_message(inputs), refund_turns(order))
    decision = {"action": "refund", "order": order, "amount": 42.0}
    document = suite(new_suite_id("content"), [{"taskId": "refund", "input": inputs,
                     "expected": golden(decision, "json-match")}], target=agent)  # fmt: skip
    with llm_host.handle.http() as http:
        ran = run_eval(llm_host.handle.client(), http, publish(http, document), agent)
    assert ran.summary["passed"] is True
    return ran.run_id, order


def test_hash_content_shows_the_shape_of_each_exchange_and_never_what_it_said(
    llm_host: LlmHost,
) -> None:
    run_id, order = _refund_eval(llm_host, "llm.hashed")
    (trial,) = task_detail(llm_host, run_id, "refund")["trialDetails"]
    assert len(trial["modelCalls"]) == 3
    for exchange in trial["modelCalls"]:
        assert "request" not in exchange
        assert "response" not in exchange
        assert exchange["requestHash"].startswith("sha256:")
        assert exchange["promptTokens"] > 0
        assert exchange["costUsd"] > 0
    assert order not in str(trial["modelCalls"])
    assert "decision" not in trial
    # The record keeps the content: the run can still serve as a replay source.
    rows = table_rows(llm_host.handle.database_url, "model_calls", run_id=run_id)
    assert all(row["request"] is not None for row in rows)


def test_erasing_a_runs_tool_content_erases_its_model_exchanges_content(
    llm_host: LlmHost,
) -> None:
    run_id, order = _refund_eval(llm_host, "llm.desk")
    with llm_host.handle.http() as http:
        erased = http.post(f"/host/wopeval/runs/{project_id(run_id)}:erase-tool-content")
    assert erased.status_code == 200, erased.text
    rows = table_rows(llm_host.handle.database_url, "model_calls", run_id=run_id)
    assert len(rows) == 3
    for row in rows:
        assert (row["request"], row["response"]) == (None, None)
        assert row["erased_at"] is not None
        assert row["request_hash"].startswith("sha256:")
        assert row["prompt_tokens"] > 0
    (trial,) = task_detail(llm_host, run_id, "refund")["trialDetails"]
    assert [("request" in m, "response" in m) for m in trial["modelCalls"]] == [(False, False)] * 3
    assert order not in str(trial["modelCalls"])


def test_retention_erases_the_model_content_of_a_run_without_tool_calls(
    llm_host: LlmHost, backend: Backend
) -> None:
    inputs = {"question": unique("expiring")}
    llm_host.server.script.add(user_message(inputs), [{"json": {"ok": True}}])
    plain = {"taskId": "plain", "input": inputs, "expected": golden({"ok": True}, "json-match")}
    document = suite(new_suite_id("retention"), [plain], target="llm.desk")
    handle = llm_host.handle
    with handle.http() as http:
        ran = run_eval(handle.client(), http, publish(http, document), "llm.desk")
    url = handle.database_url
    assert not table_rows(url, "tool_calls", run_id=ran.run_id)
    handle.stop()
    try:
        set_completed_at(url, ran.run_id, datetime.now(UTC) - timedelta(days=40))
        where = (["--database-url", url] if backend.name == "postgres"
                 else ["--data-dir", str(handle.settings.data_dir)])  # fmt: skip
        done = subprocess.run(
            [WOPEVAL, "purge", "--older-than-days", "30", *where],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    finally:
        handle.start()
    (row,) = table_rows(url, "model_calls", run_id=ran.run_id)
    assert (row["request"], row["response"]) == (None, None)
    assert row["erased_at"] is not None


def test_a_runs_model_exchanges_route_shows_them_as_its_task_detail_does(
    llm_host: LlmHost,
) -> None:
    """`/host/wopeval/runs/{runId}/model-calls`: each exchange of the run, as the trial's
    detail shows it under the agent's `wireContent`, with the invocation that asked."""
    for agent, full in (("llm.desk", True), ("llm.hashed", False)):
        run_id, order = _refund_eval(llm_host, agent)
        (trial,) = task_detail(llm_host, run_id, "refund")["trialDetails"]
        with llm_host.handle.http() as http:
            path = f"/host/wopeval/runs/{project_id(run_id)}"
            listed = http.get(f"{path}/model-calls")
            invocations = http.get(f"{path}/invocations").json()["invocations"]
        assert listed.status_code == 200, listed.text
        answer = listed.json()
        assert answer["runId"] == run_id
        (invocation,) = invocations
        exchanges = answer["modelCalls"]
        assert {e["invocationId"] for e in exchanges} == {invocation["invocationId"]}
        shown = [{k: v for k, v in e.items() if k != "invocationId"} for e in exchanges]
        assert shown == trial["modelCalls"], agent
        assert [e["index"] for e in exchanges] == [0, 1, 2]
        assert (order in listed.text) is full, agent
