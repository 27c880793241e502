"""Delegation end to end: a delegate's calls are recorded, shown, and never taken for the agent's.

`evals.delegating-agent` makes its own call, hands one turn to the scripted
agent and one to a fresh invocation of itself, then makes its closing call.
The self-delegation is the case only the delegate flag tells apart: its calls
carry the agent's own id, so neither the trajectory grade (RFC 0244 §A "the
default excludes delegates") nor the derived fixtures (RFC 0252 §D "of the
eval's agentId, excluding delegates") could exclude them by id.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from openwop_client import OpenwopClient
from openwop_client.types import CreateRunRequest

from .._server import TENANT_A, ServerHandle
from .._support import COUNTER_TOOL, read_counter, table_rows, unique, wait_terminal
from ._evals import (
    SCRIPTED_AGENT,
    counter_call,
    live_calls,
    new_suite_id,
    payloads,
    publish,
    run_eval,
    suite,
)
from .conftest import DELEGATING_AGENT, DELEGATING_WORKFLOW

Row = tuple[str, bool, Any]
"""(agentId, is_delegate, inputs) of one recorded call."""


class Keys:
    """The counter keys of one script: the agent's own, the scripted delegate's, its own turn's."""

    def __init__(self, label: str) -> None:
        base = unique(label)
        self.own, self.other, self.itself = f"{base}-own", f"{base}-other", f"{base}-self"

    def script(self) -> dict[str, Any]:
        delegated = {"calls": [counter_call("inc", self.other), counter_call("read", self.other)],
                     "answer": "delegated"}  # fmt: skip
        return {
            "calls": [counter_call("inc", self.own)],
            "delegates": [
                {"agent": SCRIPTED_AGENT, "input": delegated},
                {
                    "agent": DELEGATING_AGENT,
                    "input": {"calls": [counter_call("inc", self.itself)], "answer": "itself"},
                },
            ],
            "after": [counter_call("read", self.own)],
            "answer": "done",
        }

    def own_calls(self) -> list[dict[str, Any]]:
        return [counter_call("inc", self.own), counter_call("read", self.own)]

    def rows(self) -> list[Row]:
        """What the internal record must hold, in event order."""
        return [
            (DELEGATING_AGENT, False, {"op": "inc", "key": self.own}),
            (SCRIPTED_AGENT, True, {"op": "inc", "key": self.other}),
            (SCRIPTED_AGENT, True, {"op": "read", "key": self.other}),
            (DELEGATING_AGENT, True, {"op": "inc", "key": self.itself}),
            (DELEGATING_AGENT, False, {"op": "read", "key": self.own}),
        ]

    def counts(self, http: httpx.Client) -> list[int]:
        return [read_counter(http, key) for key in (self.own, self.other, self.itself)]


def recorded(host: ServerHandle, run_id: str) -> list[dict[str, Any]]:
    """The run's rows of the host's internal tool-call record, in sequence order."""
    return table_rows(host.database_url, "tool_calls", run_id=run_id)


def as_rows(rows: list[dict[str, Any]]) -> list[Row]:
    return [(r["agent_id"], r["is_delegate"], r["inputs"]) for r in rows]


def delegating_run(client: OpenwopClient, keys: Keys) -> tuple[str, list[Any]]:
    request = CreateRunRequest(workflowId=DELEGATING_WORKFLOW, inputs=keys.script())
    run_id: str = client.runs_create(request).runId
    events = wait_terminal(client, run_id)
    assert events[-1].type == "run.completed", [e.type for e in events]
    return run_id, events


def enclosing_invocations(events: list[Any]) -> dict[str, tuple[str, int]]:
    """callId → (the innermost open invocationId, how many are open) when the call was made."""
    open_ids: list[str] = []
    found: dict[str, tuple[str, int]] = {}
    for event in events:
        if event.type == "agent.invocation-started":
            open_ids.append(event.payload["invocationId"])
        elif event.type == "agent.invocation-completed":
            assert open_ids.pop() == event.payload["invocationId"], "brackets must nest"
        elif event.type == "agent.tool-called":
            found[event.payload["callId"]] = (open_ids[-1], len(open_ids))
    assert not open_ids
    return found


def test_a_delegates_calls_are_recorded_with_the_flag_and_shown_on_the_wire(
    eval_project_server: ServerHandle,
) -> None:
    keys = Keys("delegation-record")
    run_id, events = delegating_run(eval_project_server.client(), keys)

    rows = recorded(eval_project_server, run_id)
    assert as_rows(rows) == keys.rows()
    own = [r for r in rows if not r["is_delegate"]]
    assert len({r["invocation_id"] for r in own}) == 1, "the agent's own calls: one invocation"
    delegated = [r for r in rows if r["is_delegate"]]
    assert {r["invocation_id"] for r in delegated}.isdisjoint({own[0]["invocation_id"]})

    # The wire shows every call under the id of the agent that made it, each inside the
    # bracket of the invocation that made it: a delegate's nested in the agent's.
    called = payloads(events, "agent.tool-called")
    assert [(p["agentId"], p["inputs"]) for p in called] == [(a, i) for a, _, i in keys.rows()]
    assert [p["callId"] for p in called] == [r["call_id"] for r in rows]
    enclosing = enclosing_invocations(events)
    for row in rows:
        invocation, depth = enclosing[row["call_id"]]
        assert invocation == row["invocation_id"]
        assert (depth > 1) is row["is_delegate"], row
    started = payloads(events, "agent.invocation-started")
    assert [p["agentId"] for p in started] == [DELEGATING_AGENT, SCRIPTED_AGENT, DELEGATING_AGENT]
    completed = payloads(events, "agent.invocation-completed")
    assert [p["outcome"] for p in completed] == ["completed"] * 3
    decided = [(p["agentId"], p.get("decision")) for p in payloads(events, "agent.decided")]
    assert decided == [(SCRIPTED_AGENT, "delegated"), (DELEGATING_AGENT, "itself"),
                       (DELEGATING_AGENT, "done")]  # fmt: skip


def trajectory(order: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
    return {"kind": "trajectory", "order": order, "calls": calls}


def test_the_trajectory_grade_excludes_a_delegates_calls(
    eval_project_server: ServerHandle,
) -> None:
    keys = Keys("delegation-grade")
    every_call = [counter_call(i["op"], i["key"]) for _, _, i in keys.rows()]
    graded = {
        "own-calls": (trajectory("strict", keys.own_calls()), True),
        "every-call": (trajectory("strict", every_call), False),
        "delegate-call": (trajectory("superset", [counter_call("inc", keys.itself)]), False),
        "own-calls-subset": (trajectory("subset", keys.own_calls()), True),
    }
    tasks = [{"taskId": task_id, "input": keys.script(), "expected": want}
             for task_id, (want, _) in graded.items()]  # fmt: skip
    with eval_project_server.http(TENANT_A) as http:
        ref = publish(http, suite(new_suite_id("delegation"), tasks, target=DELEGATING_AGENT))
        run = run_eval(eval_project_server.client(), http, ref, DELEGATING_AGENT)

    outcomes = {t["taskId"]: t["passed"] for t in run.summary["tasks"]}
    assert outcomes == {task_id: passes for task_id, (_, passes) in graded.items()}
    # The delegates did run, and the eval run's own record flags their calls too. The tasks
    # run concurrently and each live call lands as it happens, so their rows interleave.
    made = sorted(json.dumps(row) for row in as_rows(recorded(eval_project_server, run.run_id)))
    assert made == sorted(json.dumps(row) for row in keys.rows() * len(graded))


def test_fixtures_derived_from_a_run_leave_out_its_delegates_calls(
    eval_project_server: ServerHandle,
) -> None:
    keys = Keys("delegation-derive")
    client = eval_project_server.client()
    source, source_events = delegating_run(client, keys)
    source_rows = recorded(eval_project_server, source)
    task = {"taskId": "replayed", "input": keys.script(),
            "expected": trajectory("strict", keys.own_calls())}  # fmt: skip
    with eval_project_server.http(TENANT_A) as http:
        ref = publish(http, suite(new_suite_id("delegation-derive"), [task],
                                  target=DELEGATING_AGENT))  # fmt: skip
        before = keys.counts(http)
        run = run_eval(client, http, ref, DELEGATING_AGENT, fixtureRuns={"replayed": source})
        assert keys.counts(http) == before, "a replay ran a tool live"
        assert live_calls(http, run.run_id) == 0

    # RFC 0252 §D: one entry per call of the eval's agentId, delegates excluded, in order.
    (copy,) = table_rows(eval_project_server.database_url, "derived_fixtures",
                         eval_run_id=run.run_id)  # fmt: skip
    assert copy["source_run_id"] == source
    own = [r for r in source_rows if not r["is_delegate"]]
    assert copy["entries"] == [
        {"tool": COUNTER_TOOL, "args": r["inputs"], "argsMatch": "exact", "response": r["result"]}
        for r in own
    ]
    assert [e["args"] for e in copy["entries"]] == [c["args"] for c in keys.own_calls()]

    # Under onMiss "fail" the agent's own calls are answered as recorded; a delegate's call,
    # having no entry, misses and runs nothing (the scripted delegate stops at its first
    # miss) — and a miss fails the task.
    replay_rows = recorded(eval_project_server, run.run_id)
    never_reached = (SCRIPTED_AGENT, True, {"op": "read", "key": keys.other})
    assert as_rows(replay_rows) == [row for row in keys.rows() if row != never_reached]
    served = [(r["served_by"], r["status"]) for r in replay_rows]
    assert served == [("fixture", "ok"), ("fixture", "error"), ("fixture", "error"),
                      ("fixture", "ok")]  # fmt: skip
    returned = {p["callId"]: p for p in payloads(run.events, "agent.tool-returned")}
    misses = [returned[r["call_id"]]["error"]["code"] for r in replay_rows if r["is_delegate"]]
    assert misses == ["fixture_miss", "fixture_miss"]
    assert run.summary["fixtureMissCount"] == 2
    assert run.task("replayed")["passed"] is False
    recorded_outcomes = {
        p["callId"]: p["outcome"] for p in payloads(source_events, "agent.tool-returned")
    }
    replayed = [returned[r["call_id"]]["outcome"] for r in replay_rows if not r["is_delegate"]]
    assert replayed == [recorded_outcomes[r["call_id"]] for r in own]
