"""The one scrub rule of `engine/runs/erasure.py`: what of each copy of tool and model content
survives erasure, for an event's payload, a trial's trace and a model exchange alike."""

from __future__ import annotations

import json
from typing import Any

from pydantic import JsonValue

from wopeval import evals
from wopeval.engine.recording import content
from wopeval.engine.runs.erasure import (
    ERASED_MESSAGE,
    erased_call,
    erased_error,
    erased_event,
    erased_exchange,
    erased_trial,
)
from wopeval.wire import events

SECRET = "secret-7f3a"
ARGS: JsonValue = {"reason": SECRET}
MCP_ERROR = {
    "code": "mcp_tool_error",
    "message": f"Error executing tool refuse: refused: {SECRET}",
    "details": {"content": [{"type": "text", "text": SECRET}]},
    "retryable": True,
}


def test_an_error_keeps_its_code_and_retryable_and_never_its_words() -> None:
    assert erased_error(MCP_ERROR) == {
        "code": "mcp_tool_error",
        "message": ERASED_MESSAGE,
        "retryable": True,
    }
    final = {"code": "declined", "message": SECRET, "retryable": False}
    assert erased_error(final) == {"code": "declined", "message": ERASED_MESSAGE}
    assert erased_error({"message": SECRET}) == {"code": "tool_error", "message": ERASED_MESSAGE}
    assert erased_error(None) is None
    assert erased_error(SECRET) is None


def _returned(status: events.ToolStatus, error: dict[str, Any] | None) -> dict[str, Any]:
    returned = content.tool_returned(
        "agent", "count:refuse", "call-1", status, {"echo": SECRET}, error, 12, "full"
    )
    return returned.to_wire()


def test_a_tool_event_keeps_its_shape_and_loses_args_result_and_error_text() -> None:
    called = content.tool_called("agent", "count:refuse", "call-1", ARGS, "full").to_wire()
    assert erased_call(called) == {
        "agentId": "agent",
        "toolName": "count:refuse",
        "callId": "call-1",
        "argsHash": evals.args_hash(ARGS),
    }
    ok = erased_call(_returned("ok", None))
    assert ok == {
        "agentId": "agent",
        "toolName": "count:refuse",
        "callId": "call-1",
        "status": "ok",
        "durationMs": 12,
    }
    failed = erased_call(_returned("error", MCP_ERROR))
    assert failed["error"] == erased_error(MCP_ERROR)
    assert SECRET not in json.dumps(failed)
    assert events.ToolReturned.model_validate(failed).error is not None


def test_a_call_that_went_out_as_a_hash_keeps_that_hash() -> None:
    hashed = content.tool_called("agent", "count:refuse", "call-1", ARGS, "hash").to_wire()
    assert erased_call(hashed) == hashed


def test_a_stored_event_is_rewritten_compactly_with_its_envelope_untouched() -> None:
    event: dict[str, Any] = {
        "runId": "t/1",
        "sequence": 4,
        "type": events.ToolReturned.TYPE,
        "payload": _returned("error", MCP_ERROR),
    }
    rewritten = erased_event(json.dumps(event))
    assert SECRET not in rewritten
    assert ", " not in rewritten
    assert ": " not in rewritten
    assert json.loads(rewritten) == {**event, "payload": erased_call(event["payload"])}
    unicode = {**event, "payload": {**event["payload"], "toolName": "count:é"}}
    assert "count:é" in erased_event(json.dumps(unicode))


def test_a_model_exchange_keeps_its_shape_and_a_miss_keeps_its_paths() -> None:
    exchange = {
        "index": 0,
        "requestHash": "sha256:ab",
        "promptTokens": 10,
        "request": {"messages": [SECRET]},
        "response": {"content": SECRET},
        "error": {
            "reason": "model replay miss",
            "diff": [{"path": "$.messages[0]", "kind": "changed", "a": SECRET, "b": "x"}],
        },
    }
    assert erased_exchange(exchange) == {
        "index": 0,
        "requestHash": "sha256:ab",
        "promptTokens": 10,
        "error": {
            "reason": "model replay miss",
            "diff": [{"path": "$.messages[0]", "kind": "changed"}],
        },
    }
    upstream = {"index": 1, "error": {"status": 500, "type": "server_error"}}
    assert erased_exchange(upstream) == upstream
    assert erased_exchange({"index": 2, "error": None}) == {"index": 2}


def test_a_trial_keeps_its_verdict_and_loses_every_copy_of_content() -> None:
    call = {
        "index": 0,
        "tool": "count:refuse",
        "servedBy": "fixture",
        "status": "error",
        "argsHash": evals.args_hash(ARGS),
        "inputs": ARGS,
        "outcome": None,
        "error": MCP_ERROR,
    }
    detail = {
        "v": 1,
        "durationMs": 30,
        "decision": "done",
        "calls": [call],
        "misses": [
            {"callIndex": 0, "tool": "count:refuse", "closestIndex": None, "reason": SECRET}
        ],
        "stderr": SECRET,
        "modelCalls": [{"index": 0, "request": SECRET, "response": SECRET}],
    }
    erased = erased_trial(detail)
    assert SECRET not in json.dumps(erased)
    assert erased == {
        "v": 1,
        "durationMs": 30,
        "decision": "done",
        "calls": [erased_call(call)],
        "misses": [{"callIndex": 0, "tool": "count:refuse", "closestIndex": None}],
        "modelCalls": [{"index": 0}],
    }
    assert erased["calls"][0]["argsHash"] == evals.args_hash(ARGS)
    older = {key: value for key, value in detail.items() if key != "modelCalls"}
    assert erased_trial(older)["modelCalls"] == []
    assert erased_trial(erased) == erased
