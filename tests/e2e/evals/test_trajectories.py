"""Trajectory grading end to end: each `order`, passing and failing on purpose.

The scripted agent makes two live counter calls, `inc` then `read` on one key,
in every task; only `expected.calls` and `order` differ. Each failing case is
built so that a neighbouring order would pass it (a reversed list passes
`unordered` but not `strict`; a short list passes `superset` but not
`unordered` or `subset`), so an order graded like another fails this test.
"""

from __future__ import annotations

from typing import Any

import httpx

from .._server import ServerHandle
from .._support import COUNTER_TOOL, read_counter, unique
from ._evals import counter_call, new_suite_id, publish, run_eval, suite, task


def expected(order: str, *calls: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "trajectory", "order": order, "calls": list(calls)}


def cases(key: str) -> dict[str, tuple[dict[str, Any], bool]]:
    """taskId → (expected, whether the task passes) for executed `[inc key, read key]`."""
    inc, read, reset = (counter_call(op, key) for op in ("inc", "read", "reset"))
    any_call = {"tool": COUNTER_TOOL}
    a_read = {"tool": COUNTER_TOOL, "args": {"op": "read"}, "argsMatch": "subset"}
    return {
        "strict-same-sequence": (expected("strict", inc, read), True),
        "strict-patterns": (expected("strict", any_call, a_read), True),
        "strict-reversed": (expected("strict", read, inc), False),
        "strict-other-args": (expected("strict", counter_call("inc", f"{key}-other"), read), False),
        "strict-one-short": (expected("strict", inc), False),
        "unordered-reversed": (expected("unordered", read, inc), True),
        # `any_call` could take `inc`, leaving the exact `inc` nothing: pairing must not be greedy.
        "unordered-overlapping": (expected("unordered", any_call, inc), True),
        "unordered-one-short": (expected("unordered", inc), False),
        "unordered-one-extra": (expected("unordered", inc, read, reset), False),
        "subset-within-more": (expected("subset", reset, read, inc), True),
        "subset-one-unexpected": (expected("subset", inc), False),
        "superset-covers-one": (expected("superset", read), True),
        "superset-one-missing": (expected("superset", read, reset), False),
        "default-order-is-strict": ({"kind": "trajectory", "calls": [read, inc]}, False),
    }


def test_each_order_passes_and_fails_on_the_calls_as_executed(
    server: ServerHandle, http_a: httpx.Client
) -> None:
    key = unique("trajectory")
    graded = cases(key)
    script = [counter_call("inc", key), counter_call("read", key)]
    tasks = [task(task_id, script, expected=want) for task_id, (want, _) in graded.items()]
    ref = publish(http_a, suite(new_suite_id("trajectory"), tasks))

    run = run_eval(server.client(), http_a, ref)

    outcomes = {t["taskId"]: (t["passed"], t["score"]) for t in run.summary["tasks"]}
    assert outcomes == {
        task_id: (passes, 1.0 if passes else 0.0) for task_id, (_, passes) in graded.items()
    }
    scored = {p["taskId"]: p["passed"] for p in run.of_type("eval.scored")}
    assert scored == {task_id: passes for task_id, (_, passes) in graded.items()}
    passing = sum(passes for _, passes in graded.values())
    assert run.summary["passedCount"] == passing
    assert run.summary["passed"] is False
    # Every task made both calls live: the grade is about what ran, not about misses.
    assert run.summary["fixtureMissCount"] == 0
    assert read_counter(http_a, key) == len(graded)
    # The tasks run concurrently and each live call lands as it happens: count, not order.
    called = sorted(p["inputs"]["op"] for p in run.of_type("agent.tool-called"))
    assert called == sorted(["inc", "read"] * len(graded))
    assert {(p["toolName"], p["inputs"]["key"]) for p in run.of_type("agent.tool-called")} == {
        (COUNTER_TOOL, key)
    }


def test_a_suite_of_passing_trajectories_passes(server: ServerHandle, http_a: httpx.Client) -> None:
    key = unique("trajectory-pass")
    graded = {task_id: case for task_id, case in cases(key).items() if case[1]}
    script = [counter_call("inc", key), counter_call("read", key)]
    tasks = [task(task_id, script, expected=want) for task_id, (want, _) in graded.items()]
    ref = publish(http_a, suite(new_suite_id("trajectory-pass"), tasks))

    run = run_eval(server.client(), http_a, ref)

    assert run.summary["passed"] is True
    assert run.summary["aggregateScore"] == 1.0
    assert run.summary["passedCount"] == run.summary["taskCount"] == len(graded)
