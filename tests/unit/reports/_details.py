"""Task details as the host's routes return them, for the report renderers' unit tests.

The shapes are the wire's (`wire/task_detail.py`); the values are written here so
each renderer can be checked on one detail of every kind: a golden diff, an agent
exception, a fixture miss with its closest recording, a `hash` agent's trial.
"""

from __future__ import annotations

from typing import Any

from wopeval.reports import RunWhy
from wopeval.wire.task_detail import TaskDetail, TaskLine, TaskList

RUN_ID = "t/" + "d" * 32
HOSTILE = "<script>alert('decision')</script>"


def _line(task_id: str, passed: bool, reason: str, **extra: Any) -> dict[str, Any]:
    figures = {"trials": 1, "passedTrials": int(passed), "fixtureMissCount": 0}
    return {
        "taskId": task_id,
        "scored": True,
        "passed": passed,
        "score": float(passed),
        "reason": reason,
        **figures,
        **extra,
    }


WRONG_REASON = 'json-match: 1 path differs: $.city: expected "Oslo", got "Bergen"'
WRONG = {
    **_line("wrong", False, WRONG_REASON),
    "runId": RUN_ID,
    "trialDetails": [
        {
            "trial": 0,
            "passed": False,
            "reason": WRONG_REASON,
            "durationMs": 7,
            "decision": {"city": "Bergen", "note": HOSTILE},
            "decisionHash": "sha256:" + "1" * 64,
            "expected": {"kind": "golden", "match": {"strategy": "json-match",
                                                     "value": {"city": "Oslo"}}},
            "grade": {"passed": False, "score": 0.0, "reason": WRONG_REASON,
                      "diff": [{"path": "$.city", "kind": "changed",
                                "expected": "Oslo", "actual": "Bergen"},
                               {"path": "$.note", "kind": "added", "actual": HOSTILE}]},
            "calls": [{"index": 0, "tool": "weather:lookup", "servedBy": "fixture",
                       "status": "ok", "delegate": False, "durationMs": 1,
                       "inputs": {"city": "Bergen"}, "argsHash": "sha256:" + "2" * 64,
                       "outcome": {"temp": 4}},
                      {"index": 1, "tool": "weather:alerts", "servedBy": "live",
                       "status": "ok", "delegate": True, "durationMs": 30,
                       "inputs": {}, "argsHash": "sha256:" + "3" * 64, "outcome": []}],
            "misses": [],
        }
    ],
}  # fmt: skip
RAISED = {
    **_line("raised", False, "the agent raised KeyError: 'city'"),
    "runId": RUN_ID,
    "trialDetails": [
        {"trial": 0, "passed": False, "reason": "the agent raised KeyError: 'city'",
         "durationMs": 2, "calls": [], "misses": [],
         "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "x"}},
         "error": {"type": "KeyError", "message": "'city'"}, "stderr": "line\x00one"}
    ],
}  # fmt: skip
MISS_REASON = (
    "fixture miss: no unconsumed fixture matches this call to shop:order; closest: "
    "toolResponses[0], 1 path differs: $.express: recorded (absent), the call has true"
)
MISSED = {
    **_line("missed", False, MISS_REASON, fixtureMissCount=1),
    "runId": RUN_ID,
    "trialDetails": [
        {"trial": 0, "passed": False, "reason": MISS_REASON, "durationMs": 3,
         "decision": "escalate", "decisionHash": "sha256:" + "4" * 64,
         "grade": {"passed": True, "score": 1.0, "reason": "exact: the decision equals"},
         "calls": [{"index": 0, "tool": "shop:order", "servedBy": "miss", "status": "error",
                    "delegate": False, "inputs": {"order_id": "A-1", "express": True},
                    "argsHash": "sha256:" + "5" * 64,
                    "error": {"code": "fixture_miss", "message": "no unconsumed fixture"}}],
         "misses": [{"callIndex": 0, "tool": "shop:order", "argsHash": "sha256:" + "5" * 64,
                     "closest": {"entryIndex": 0, "args": {"order_id": "A-1"}},
                     "diff": [{"path": "$.express", "kind": "added", "actual": True}],
                     "consumedForTool": 0}]}
    ],
}  # fmt: skip
HASHED = {
    **_line("hashed", False, "the decision did not match the expected value (exact)"),
    "runId": RUN_ID,
    "trialDetails": [
        {"trial": 0, "passed": False, "durationMs": 1,
         "reason": "the decision did not match the expected value (exact)",
         "decisionHash": "sha256:" + "6" * 64,
         "calls": [{"index": 0, "tool": "counter:inc", "servedBy": "live", "status": "ok",
                    "delegate": False, "argsHash": "sha256:" + "7" * 64}],
         "misses": []}
    ],
}  # fmt: skip
PASSED = {**_line("fine", True, "passed"), "runId": RUN_ID, "trialDetails": []}

DETAILS = {d["taskId"]: TaskDetail.model_validate(d) for d in (WRONG, RAISED, MISSED, HASHED)}


def run_why(*task_ids: str, with_details: bool = True) -> RunWhy:
    """The listing of the tasks named (all above when none), with their details."""
    documents = [WRONG, RAISED, MISSED, HASHED, PASSED]
    chosen = [d for d in documents if not task_ids or d["taskId"] in task_ids]
    lines = [
        TaskLine.model_validate({k: v for k, v in d.items() if k in TaskLine.model_fields})
        for d in chosen
    ]
    details = {d["taskId"]: DETAILS[d["taskId"]] for d in chosen if d["taskId"] in DETAILS}
    return RunWhy(TaskList(runId=RUN_ID, tasks=lines), details if with_details else {})
