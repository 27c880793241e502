"""The recording model proxy: an agent outside the host on the plain `openai` client.

The command lane hands the agent `OPENAI_BASE_URL` (its invocation's proxy)
and `OPENAI_API_KEY` (the invocation's token); the proxy forwards to the
agent's upstream with the real key added at egress, relays streamed deltas
(tool-call argument deltas included) or whole answers, and records each
exchange like the openai lane. Under model replay an eval serves the same
agent the recorded answers: no request reaches the upstream.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from .._support import table_rows, unique, whole_store
from ..evals._evals import golden, live_calls, new_suite_id, publish, run_eval, suite
from .conftest import MODEL, LlmHost
from .test_openai_lane import decided, live_model_calls, produce, task_detail

ADD_TURNS: list[dict[str, Any]] = [
    {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]},
    {"content": "The sum is 5."},
]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_command_agent_on_the_plain_openai_client_is_recorded_through_the_proxy_and_replayed(
    llm_host: LlmHost, api_key: str, stream: bool
) -> None:
    question = unique("add")
    inputs = {"question": question, "stream": stream}
    script = llm_host.server.script
    script.add(question, ADD_TURNS)

    source, events = produce(llm_host, "llm-proxy", inputs)

    assert decided(events) == {"answer": "The sum is 5."}
    received = script.requests_with(question)
    assert len(received) == 2
    # The upstream saw the real key, added at egress; the agent only ever had the token.
    assert {r.authorization for r in received} == {f"Bearer {api_key}"}
    assert all(r.body.get("stream", False) is stream for r in received)
    database = llm_host.handle.database_url
    rows = sorted(table_rows(database, "model_calls", run_id=source), key=lambda r: r["ordinal"])
    assert [(r["via"], r["served_by"], r["status"], r["stream"]) for r in rows] == [
        ("proxy", "live", "ok", stream)
    ] * 2
    assert rows[0]["response"]["toolCalls"] == [
        {"id": "call_0_0", "name": "add", "arguments": json.dumps({"a": 2, "b": 3})}
    ]
    assert rows[0]["response"]["finishReason"] == "tool_calls"
    assert rows[1]["response"]["content"] == "The sum is 5."
    assert all(r["prompt_tokens"] and r["cost_usd"] for r in rows)
    assert "stream" not in rows[0]["request"], "transport keys are not part of the request"
    assert rows[0]["request"]["model"] == MODEL
    store = json.dumps(whole_store(database), default=str)
    assert api_key not in store
    assert api_key not in json.dumps([e.payload for e in events])

    document = suite(new_suite_id("proxy"), [{"taskId": "add", "input": inputs,
                     "expected": golden({"answer": "The sum is 5."}, "json-match")}],
                     target="llm.proxy-agent")  # fmt: skip
    with llm_host.handle.http() as http:
        ref = publish(http, document)
        replayed = run_eval(
            llm_host.handle.client(), http, ref, "llm.proxy-agent", fixtureRuns={"add": source}
        )
        assert live_calls(http, replayed.run_id) == 0
    assert replayed.summary["passed"] is True
    assert len(script.requests_with(question)) == 2, "a replayed answer reached the upstream"
    assert live_model_calls(llm_host, replayed.run_id) == 0
    (trial,) = task_detail(llm_host, replayed.run_id, "add")["trialDetails"]
    assert [(m["via"], m["servedBy"], m["stream"]) for m in trial["modelCalls"]] == [
        ("proxy", "replay", stream)
    ] * 2


def _post(url: str, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    with httpx.Client(trust_env=False) as http:
        return http.post(url, json=body, headers=headers or {})


def test_the_proxy_token_is_refused_once_the_invocation_ended_and_never_stored(
    llm_host: LlmHost, tmp_path: Path
) -> None:
    question = unique("token")
    seen_file = tmp_path / "proxy.json"
    inputs = {"question": question, "stream": False, "urlFile": str(seen_file)}
    llm_host.server.script.add(question, ADD_TURNS)
    run_id, events = produce(llm_host, "llm-proxy", inputs)
    first = llm_host.server.script.requests_with(question)[0]
    seen = json.loads(seen_file.read_text())
    token = seen["key"]
    assert len(token) >= 40
    assert seen["url"].endswith(f"/host/wopeval/openai/{token}/v1")
    assert token not in json.dumps([e.payload for e in events])
    assert token not in json.dumps(whole_store(llm_host.handle.database_url), default=str)

    # The ended token, with or without a key of either tenant, and an unknown one: one 404.
    url = seen["url"] + "/chat/completions"
    unknown = url.replace(token, "x" * len(token))
    handle = llm_host.handle
    answers = [
        _post(url, first.body, {"Authorization": f"Bearer {token}"}),
        _post(url, first.body, {"Authorization": f"Bearer {handle.key_a}"}),
        _post(url, first.body, {"Authorization": f"Bearer {handle.key_b}"}),
        _post(unknown, first.body),
    ]
    assert [a.status_code for a in answers] == [404] * 4
    assert len({a.content for a in answers}) == 1
    assert answers[0].json()["error"] == "not_found"
    assert len(llm_host.server.script.requests_with(question)) == 2, "a refused request went out"
    assert table_rows(handle.database_url, "model_calls", run_id=run_id)
    with handle.http() as http:
        openapi = http.get("/openapi.json").json()
    assert not [path for path in openapi["paths"] if "openai" in path]
