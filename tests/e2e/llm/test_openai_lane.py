"""The openai lane end to end: the host runs an LLM agent's tool loop against a real
OpenAI-compatible server (the scripted one under tests/) through the official SDK.

In production every model turn and every tool call is recorded, the API key
reaches only the model server; an eval replaying the run through
`fixtureRuns` serves the tools from the recording and asks the model live,
so a changed system prompt gets its paired verdict; with `model_replay =
"recorded"` the model answers are replayed too (no upstream request, the
same trial three times over) and a changed prompt is a miss that fails
closed. Exhausted turns, a 429 then success and a 500 end as documented.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from openwop_client.types import CreateRunRequest
from openwop_client.wire_id import project_id

from _model_server import REPORTED_SUFFIX

from .._support import table_rows, unique, wait_terminal, whole_store
from ..evals._evals import golden, live_calls, new_suite_id, publish, run_eval, suite
from .conftest import DESK_PROMPT, MODEL, PRICES, LlmHost

ESCALATING = DESK_PROMPT + " Escalate every refund to a human."


def user_message(inputs: dict[str, Any]) -> str:
    """The user message the openai lane sends for an input object (compact sorted JSON)."""
    return json.dumps(inputs, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def refund_turns(order: str, *, escalate: bool = False) -> list[dict[str, Any]]:
    """Look the order up on two tools at once, refund it, answer in JSON."""
    lookups = {"tool_calls": [{"name": "shop__lookup", "arguments": {"order": order}},
                              {"name": "count__lookup", "arguments": {"key": order}}]}  # fmt: skip
    if escalate:
        return [lookups, {"json": {"action": "escalate", "order": order}}]
    refund = {
        "tool_calls": [{"name": "shop__refund", "arguments": {"order": order, "amount": 42.0}}]
    }
    return [lookups, refund, {"json": {"action": "refund", "order": order, "amount": 42.0}}]


def produce(host: LlmHost, workflow: str, inputs: dict[str, Any]) -> tuple[str, list[Any]]:
    client = host.handle.client()
    run_id: str = client.runs_create(CreateRunRequest(workflowId=workflow, inputs=inputs)).runId
    events = wait_terminal(client, run_id)
    assert events[-1].type == "run.completed", [e.type for e in events]
    return run_id, events


def decided(events: list[Any]) -> Any:
    return next(e.payload["decision"] for e in events if e.type == "agent.decided")


def task_detail(host: LlmHost, run_id: str, task_id: str) -> dict[str, Any]:
    with host.handle.http() as http:
        response = http.get(f"/host/wopeval/runs/{project_id(run_id)}/tasks/{task_id}")
    assert response.status_code == 200, response.text
    detail: dict[str, Any] = response.json()
    return detail


def live_model_calls(host: LlmHost, run_id: str) -> int:
    with host.handle.http() as http:
        count: int = http.get(f"/host/wopeval/runs/{project_id(run_id)}/live-calls").json()[
            "liveModelCalls"
        ]
    return count


def refund_suite(agent: str, inputs: dict[str, Any], decision: Any, **extra: Any) -> dict[str, Any]:
    task = {"taskId": "refund", "input": inputs, "expected": golden(decision, "json-match")}
    return suite(new_suite_id("llm"), [task], target=agent, **extra)


def test_a_production_run_records_every_model_turn_and_tool_call_with_the_key_only_at_egress(
    llm_host: LlmHost, api_key: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Not ending in 9: the shop's lookup gives such an order a total of 500 (llm_shop_tools).
    order = unique("A") + "0"
    inputs = {"question": f"Refund order {order}"}
    llm_host.server.script.add(user_message(inputs), refund_turns(order))
    mcp_before = llm_host.project.calls.count()
    caplog.set_level(logging.DEBUG)

    run_id, events = produce(llm_host, "llm-desk", inputs)

    assert decided(events) == {"action": "refund", "order": order, "amount": 42.0}
    database = llm_host.handle.database_url
    calls = table_rows(database, "tool_calls", run_id=run_id)
    assert [(c["tool"], c["served_by"], c["status"]) for c in calls] == [
        ("shop:lookup", "live", "ok"), ("count:lookup", "live", "ok"), ("shop:refund", "live", "ok")
    ]  # fmt: skip
    assert llm_host.project.calls.count() == mcp_before + 1, "the MCP tool was not called"
    exchanges = sorted(
        table_rows(database, "model_calls", run_id=run_id), key=lambda r: r["ordinal"]
    )
    assert [(e["via"], e["served_by"], e["status"], e["attempts"]) for e in exchanges] == [
        ("lane", "live", "ok", 1)
    ] * 3
    for exchange in exchanges:
        assert exchange["model"] == MODEL
        assert exchange["response_model"] == MODEL + REPORTED_SUFFIX
        assert exchange["prompt_tokens"] > 0
        assert exchange["completion_tokens"] > 0
        expected_cost = (
            exchange["prompt_tokens"] * PRICES["input"]
            + exchange["completion_tokens"] * PRICES["output"]
        ) / 1_000_000
        assert exchange["cost_usd"] == pytest.approx(expected_cost)
        assert exchange["request_hash"].startswith("sha256:")
    first, second, _ = (e["request"] for e in exchanges)
    # `count:lookup`, `shop:lookup`, `shop:refund`, by the names every model API accepts.
    assert [t["function"]["name"] for t in first["tools"]] == [
        "count__lookup", "shop__lookup", "shop__refund"
    ]  # fmt: skip
    assert first["response_format"] == {"type": "json_object"}
    assert [m["role"] for m in second["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
    ]
    assert json.loads(second["messages"][3]["content"])["total"] == 42.0
    assert exchanges[0]["response"]["toolCalls"][1]["name"] == "count__lookup"

    received = llm_host.server.script.requests_with(user_message(inputs))
    assert len(received) == 3
    assert {r.authorization for r in received} == {f"Bearer {api_key}"}
    # The key: at egress only — in no event, no table of the store, no log line.
    assert api_key not in json.dumps([e.payload for e in events])
    assert api_key not in json.dumps(whole_store(database), default=str)
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert logged, "nothing was logged at all"
    assert api_key not in logged


def test_an_eval_replays_the_tools_and_asks_the_model_live_for_the_paired_verdict(
    llm_host: LlmHost,
) -> None:
    order = unique("B")
    inputs = {"question": f"Refund order {order}"}
    script = llm_host.server.script
    script.add(user_message(inputs), refund_turns(order))
    script.add(user_message(inputs), refund_turns(order, escalate=True), system_contains="Escalate")
    source, events = produce(llm_host, "llm-desk", inputs)
    mcp_before = llm_host.project.calls.count()
    document = refund_suite("llm.desk", inputs, decided(events), modes=("golden", "regression"))
    client = llm_host.handle.client()
    with llm_host.handle.http() as http:
        ref = publish(http, document)
        baseline = run_eval(client, http, ref, "llm.desk", fixtureRuns={"refund": source})
        assert baseline.summary["passed"] is True
        assert live_calls(http, baseline.run_id) == 0
    assert live_model_calls(llm_host, baseline.run_id) == 3
    try:
        llm_host.prompt("llm.desk", ESCALATING)
        asked = len(script.requests_with(user_message(inputs)))
        with llm_host.handle.http() as http:
            candidate = run_eval(
                llm_host.handle.client(),
                http,
                ref,
                "llm.desk",
                fixtureRuns={"refund": source},
                baselineRunId=baseline.run_id,
                evalModes=["golden", "regression"],
            )
            assert live_calls(http, candidate.run_id) == 0
    finally:
        llm_host.prompt("llm.desk", DESK_PROMPT)
    assert candidate.summary["regression"]["verdict"] == "regressed"
    assert candidate.summary["tasks"][0]["passed"] is False
    assert len(script.requests_with(user_message(inputs))) == asked + 2, "the model was not live"
    assert llm_host.project.calls.count() == mcp_before, "a replay reached the MCP server"
    detail = task_detail(llm_host, candidate.run_id, "refund")
    (trial,) = detail["trialDetails"]
    assert [c["servedBy"] for c in trial["calls"]] == ["fixture", "fixture"]
    assert [m["servedBy"] for m in trial["modelCalls"]] == ["live", "live"]
    assert trial["modelCalls"][0]["request"]["messages"][0]["content"] == ESCALATING


def repeatable(detail: dict[str, Any]) -> Any:
    """A task detail without its wall times: what must not change between replays."""

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: strip(v)
                for k, v in node.items()
                if k not in ("durationMs", "latencyMs", "runId")
            }
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return strip(detail)


def test_model_replay_answers_with_no_upstream_request_and_misses_a_changed_prompt(
    llm_host: LlmHost,
) -> None:
    order = unique("P")
    inputs = {"question": f"Refund order {order}"}
    llm_host.server.script.add(user_message(inputs), refund_turns(order))
    source, events = produce(llm_host, "llm-pinned", inputs)
    asked = len(llm_host.server.script.received)
    document = refund_suite("llm.pinned", inputs, decided(events))
    details = []
    with llm_host.handle.http() as http:
        ref = publish(http, document)
        for _ in range(3):
            ran = run_eval(
                llm_host.handle.client(), http, ref, "llm.pinned", fixtureRuns={"refund": source}
            )
            assert ran.summary["passed"] is True
            assert ran.summary["fixtureMissCount"] == 0
            assert live_calls(http, ran.run_id) == 0
            assert live_model_calls(llm_host, ran.run_id) == 0
            details.append(task_detail(llm_host, ran.run_id, "refund"))
    assert len(llm_host.server.script.received) == asked, "a replayed model answer reached upstream"
    (trial,) = details[0]["trialDetails"]
    assert [m["servedBy"] for m in trial["modelCalls"]] == ["replay"] * 3
    assert "costUsd" not in details[0] or details[0]["costUsd"] is None
    assert repeatable(details[0]) == repeatable(details[1]) == repeatable(details[2])

    try:
        llm_host.prompt("llm.pinned", ESCALATING)
        with llm_host.handle.http() as http:
            missed = run_eval(
                llm_host.handle.client(), http, ref, "llm.pinned", fixtureRuns={"refund": source}
            )
    finally:
        llm_host.prompt("llm.pinned", DESK_PROMPT)
    assert missed.summary["passed"] is False
    assert missed.summary["fixtureMissCount"] == 1
    assert len(llm_host.server.script.received) == asked, "a model miss reached upstream"
    detail = task_detail(llm_host, missed.run_id, "refund")
    (trial,) = detail["trialDetails"]
    assert trial["reason"].startswith("model replay miss")
    # It names the source's request at the same position and the path the prompt changed.
    assert trial["reason"].endswith(
        "; nearest recorded request: exchange 0, 1 path differs: $.messages[0].content"
    )
    (miss,) = trial["modelCalls"]
    assert (miss["servedBy"], miss["api"]) == ("miss", "chat")
    assert miss["error"]["nearest"]["ordinal"] == 0
    assert miss["error"]["diff"] == [
        {"path": "$.messages[0].content", "kind": "changed", "expected": DESK_PROMPT,
         "actual": ESCALATING}
    ]  # fmt: skip
    assert trial["calls"] == []


def test_turns_retries_and_errors_end_as_documented(llm_host: LlmHost) -> None:
    script = llm_host.server.script
    looping = {"question": unique("loop")}
    lookup = {"tool_calls": [{"name": "shop__lookup", "arguments": {"order": "L-1"}}]}
    script.add(user_message(looping), [lookup] * 5)
    limited = {"question": unique("limited")}
    rate_limited = [{"status": 429, "retry_after": "0"}]
    script.add(user_message(limited), [{"json": {"ok": True}, "fail_first": rate_limited}])
    broken = {"question": unique("broken")}
    script.add(
        user_message(broken),
        [{"json": {"ok": True}, "fail_always": {"status": 500, "retry_after": "0"}}],
    )
    refused = {"question": unique("refused")}
    script.add(user_message(refused), [{"refusal": "I cannot help with refunds."}])
    garbled = {"question": unique("garbled")}
    script.add(user_message(garbled), [{"content": "ok, refunded!"}])  # not the JSON asked for
    inputs = {"loop": looping, "limited": limited, "broken": broken, "refused": refused,
              "garbled": garbled}  # fmt: skip
    tasks = [
        {"taskId": task_id, "input": value, "expected": golden({"ok": True}, "json-match")}
        for task_id, value in inputs.items()
    ]
    with llm_host.handle.http() as http:
        ref = publish(http, suite(new_suite_id("outcomes"), tasks, target="llm.desk"))
        ran = run_eval(llm_host.handle.client(), http, ref, "llm.desk")
    passed = {t["taskId"]: t["passed"] for t in ran.summary["tasks"]}
    assert passed == {
        "loop": False, "limited": True, "broken": False, "refused": False, "garbled": False
    }  # fmt: skip

    (loop,) = task_detail(llm_host, ran.run_id, "loop")["trialDetails"]
    assert "no final answer within max_turns (4)" in loop["error"]["message"]
    assert len(loop["modelCalls"]) == 4
    assert len(loop["calls"]) == 4

    (limited_trial,) = task_detail(llm_host, ran.run_id, "limited")["trialDetails"]
    (exchange,) = limited_trial["modelCalls"]
    assert (exchange["status"], exchange["attempts"]) == ("ok", 2)
    assert len(script.requests_with(user_message(limited))) == 2

    (broken_trial,) = task_detail(llm_host, ran.run_id, "broken")["trialDetails"]
    assert broken_trial["error"]["type"] == "ModelCallFailed"
    assert "HTTP 500 (after 3 attempts)" in broken_trial["error"]["message"]
    (failed,) = broken_trial["modelCalls"]
    assert failed["error"]["status"] == 500
    assert failed["attempts"] == 3
    assert len(script.requests_with(user_message(broken))) == 3

    for task_id, reason in (("refused", "the model refused: I cannot help with refunds."),
                            ("garbled", "the model's final answer is not JSON")):  # fmt: skip
        (trial,) = task_detail(llm_host, ran.run_id, task_id)["trialDetails"]
        assert trial["error"]["type"] == "AgentFailed"
        assert reason in trial["error"]["message"]
        assert reason in trial["reason"]


def test_cost_and_latency_reach_the_summary_and_max_cost_usd_fails_the_suite(
    llm_host: LlmHost,
) -> None:
    inputs = {"question": unique("priced")}
    llm_host.server.script.add(user_message(inputs), [{"json": {"ok": True}}] * 1)
    task = {"taskId": "priced", "input": inputs, "expected": golden({"ok": True}, "json-match")}
    summaries = {}
    with llm_host.handle.http() as http:
        for bar in (1.0, 0.0000001):
            document = suite(new_suite_id("cost"), [task], target="llm.desk",
                             thresholds={"passScore": 1.0, "maxCostUsd": bar})  # fmt: skip
            ran = run_eval(llm_host.handle.client(), http, publish(http, document), "llm.desk")
            summaries[bar] = ran
    cheap, dear = summaries[1.0], summaries[0.0000001]
    (exchange,) = table_rows(llm_host.handle.database_url, "model_calls", run_id=cheap.run_id)
    assert cheap.summary["totalCostUsd"] == pytest.approx(exchange["cost_usd"])
    assert cheap.summary["tasks"][0]["costUsd"] == pytest.approx(exchange["cost_usd"])
    assert cheap.summary["tasks"][0]["latencyMs"] >= 0
    assert cheap.summary["passed"] is True
    (scored,) = cheap.of_type("eval.scored")
    assert scored["costUsd"] == pytest.approx(exchange["cost_usd"])
    # RFC 0081 §C: `passed` needs cost ≤ maxCostUsd, whatever the tasks scored.
    assert dear.summary["tasks"][0]["passed"] is True
    assert dear.summary["passed"] is False
    detail = task_detail(llm_host, cheap.run_id, "priced")
    assert detail["costUsd"] == pytest.approx(exchange["cost_usd"])
    assert detail["trialDetails"][0]["costUsd"] == pytest.approx(exchange["cost_usd"])
