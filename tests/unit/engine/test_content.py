"""What leaves the host of a trial: its reason line, first cause first, content per wireContent."""

from __future__ import annotations

import json
from typing import Any

from wopeval.engine.recording.content import reason_line, trial_view
from wopeval.store import StoredTrial
from wopeval.wire.task_detail import TrialDetail


def _detail(**parts: Any) -> dict[str, Any]:
    return {"misses": [], "error": None, "grade": None, **parts}


MISS = {"callIndex": 0, "tool": "crm:refund", "reason": "no unconsumed fixture matches …"}


def test_a_miss_is_named_before_the_exception_it_caused() -> None:
    detail = _detail(misses=[MISS], error={"type": "ToolCallError", "message": "fixture_miss"})
    assert reason_line(detail, full=True) == "fixture miss: no unconsumed fixture matches …"
    assert (
        reason_line(detail, full=False) == "fixture miss: a call to crm:refund no recording serves"
    )


def test_more_misses_are_counted() -> None:
    detail = _detail(misses=[MISS, {**MISS, "callIndex": 1}])
    assert reason_line(detail, full=True).endswith("(and 1 more)")


def test_an_exception_then_the_grade() -> None:
    raised = _detail(error={"type": "KeyError", "message": "'city'"})
    assert reason_line(raised, full=True) == "the agent raised KeyError: 'city'"
    assert reason_line(raised, full=False) == "the agent raised KeyError"
    graded = _detail(
        grade={"passed": False, "score": 0.0, "reason": "exact: expected 'a', got 'b'"},
        expected={"kind": "golden", "match": {"strategy": "exact", "value": "a"}},
    )
    assert reason_line(graded, full=True) == "exact: expected 'a', got 'b'"
    assert reason_line(graded, full=False) == (
        "the decision did not match the expected value (exact)"
    )
    assert reason_line(_detail(grade={"passed": True, "score": 1.0, "reason": ""}), True) == (
        "passed"
    )


MODEL_MISS: dict[str, Any] = {
    "index": 1,
    "agentId": "a",
    "delegate": False,
    "api": "messages",
    "via": "proxy",
    "servedBy": "miss",
    "status": "error",
    "model": "claude-test",
    "stream": False,
    "attempts": 0,
    "latencyMs": 0,
    "requestHash": "sha256:" + "0" * 64,
    "request": {"system": "secret prompt"},
    "response": None,
    "error": {
        "code": "model_replay_miss",
        "reason": "model replay: … (model exchange 1); nearest recorded "
        "request: exchange 1, 1 path differs: $.system",
        "nearestReason": "nearest recorded request: exchange 1, 1 path differs: $.system",
        "nearest": {"ordinal": 1, "requestHash": "sha256:" + "1" * 64},
        "diff": [{"path": "$.system", "kind": "changed", "expected": "old", "actual": "new"}],
    },
}


def _trial(mode: str) -> TrialDetail:
    detail = _detail(calls=[], durationMs=3, modelCalls=[MODEL_MISS])
    return trial_view(StoredTrial("t", 0, False, mode, detail, erased=False))


def test_a_model_miss_names_the_nearest_request_and_shows_its_diff_values_only_in_full() -> None:
    full, hashed = _trial("full"), _trial("hash")
    for shown in (full, hashed):
        assert shown.reason == (
            "model replay miss: the source run made no request like model exchange 1; nothing "
            "reached the model; nearest recorded request: exchange 1, 1 path differs: $.system"
        )
        assert shown.modelCalls[0].api == "messages"
    assert full.modelCalls[0].error == MODEL_MISS["error"]
    assert full.modelCalls[0].request == {"system": "secret prompt"}
    kept = hashed.modelCalls[0]
    assert kept.request is None
    assert kept.error is not None
    assert kept.error["diff"] == [{"path": "$.system", "kind": "changed"}]
    assert "secret" not in kept.model_dump_json() + hashed.reason
    assert "old" not in json.dumps(kept.error)


def _exchange(delegate: bool = False) -> dict[str, Any]:
    return {"index": 0, "delegate": delegate, "servedBy": "live"}


def test_a_trial_that_skipped_the_model_its_source_asked_says_so_after_its_cause() -> None:
    passed = _detail(grade={"passed": True, "score": 1.0, "reason": ""})
    note = "the agent made no model call where its source run made 2 model calls"
    assert reason_line(passed, True, source_model_calls=2) == f"passed; {note}"
    # A delegate's exchange is not the agent's own.
    delegated = {**passed, "modelCalls": [_exchange(delegate=True)]}
    assert reason_line(delegated, False, source_model_calls=2) == f"passed; {note}"
    asked = {**passed, "modelCalls": [_exchange()]}
    assert reason_line(asked, True, source_model_calls=2) == "passed"
    assert reason_line(passed, True, source_model_calls=0) == "passed"
    assert reason_line(passed, True) == "passed"
    raised = _detail(error={"type": "KeyError", "message": "'city'"})
    assert reason_line(raised, True, source_model_calls=1) == (
        "the agent raised KeyError: 'city'; the agent made no model call where its source run "
        "made 1 model call"
    )
