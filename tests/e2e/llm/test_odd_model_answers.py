"""A model's odd but legal answer through the recording model proxy: recorded, replayed.

An OpenAI-compatible server may answer a lone surrogate in its text (`"\\ud800"`, legal
JSON text), an integer beyond 64 bits in a tool call's arguments (a string holding JSON)
or in a token count. The proxy relays the answer as it came and records it; under model
replay the agent is served the same content, from the record.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from .._support import table_rows, unique
from ..evals._evals import golden, live_calls, new_suite_id, publish, run_eval, suite
from .conftest import LlmHost
from .test_openai_lane import decided, live_model_calls, produce, task_detail

WEI = 123456789012345678901234567890
TOKENS = 2**70
"""Token counts past 64 bits: what a server may report, and no 64-bit column holds."""


USAGE = {"prompt_tokens": TOKENS, "completion_tokens": 1, "total_tokens": TOKENS + 1}


def _turns(kind: str) -> list[dict[str, Any]]:
    """`add` called with an amount beyond 64 bits; then an answer holding a lone surrogate
    (`surrogate`) or reporting counts beyond 64 bits (`usage`)."""
    last: dict[str, Any] = {"content": "sum \ud800"}
    if kind == "usage":
        last = {"content": "sum", "usage": USAGE}
    return [{"tool_calls": [{"name": "add", "arguments": {"a": WEI, "b": 3}}]}, last]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("kind", ["surrogate", "usage"])
def test_an_odd_model_answer_is_recorded_and_replayed(
    llm_host: LlmHost, kind: str, stream: bool
) -> None:
    question = unique("odd")
    inputs = {"question": question, "stream": stream, "showUsage": kind == "usage"}
    script = llm_host.server.script
    script.add(question, _turns(kind))
    source, events = produce(llm_host, "llm-proxy", inputs)
    decision: dict[str, Any] = {"answer": "sum \ud800"}
    if kind == "usage":
        decision = {"answer": "sum", "usage": USAGE}
    assert _text(decided(events)) == _text(decision)
    rows = sorted(
        table_rows(llm_host.handle.database_url, "model_calls", run_id=source),
        key=lambda r: r["ordinal"],
    )
    assert [r["status"] for r in rows] == ["ok", "ok"]
    (call,) = rows[0]["response"]["toolCalls"]
    assert json.loads(call["arguments"]) == {"a": WEI, "b": 3}
    assert rows[1]["response"]["content"] == decision["answer"]
    if kind == "usage":
        # No token column holds the counts: the exchange has none, nor a cost; its answer
        # keeps them.
        assert (rows[1]["prompt_tokens"], rows[1]["cost_usd"]) == (None, None)
        assert rows[1]["response"]["usage"]["promptTokens"] == TOKENS

    document = suite(new_suite_id("odd-model"), [{"taskId": "odd", "input": inputs,
                     "expected": golden("unused")}], target="llm.proxy-agent")  # fmt: skip
    with llm_host.handle.http() as http:
        ref = publish(http, document)
        replayed = run_eval(
            llm_host.handle.client(), http, ref, "llm.proxy-agent", fixtureRuns={"odd": source}
        )
        assert live_calls(http, replayed.run_id) == 0
    assert len(script.requests_with(question)) == 2, "a replayed answer reached the upstream"
    assert live_model_calls(llm_host, replayed.run_id) == 0
    (trial,) = task_detail(llm_host, replayed.run_id, "odd")["trialDetails"]
    assert [(m["servedBy"], m["stream"]) for m in trial["modelCalls"]] == [("replay", stream)] * 2
    # The agent was served what the model said, from the record: the same decision.
    assert _text(trial["decision"]) == _text(decision)


def _text(value: Any) -> str:
    """`value`'s sorted JSON text: alike only for the same integers (not floats)."""
    return json.dumps(value, sort_keys=True)
