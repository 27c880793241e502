"""`evals/_run_diff.py`: RFC 0054 `diffRun` as a pure function of two logs (runs.md §Diff).

The logs are built here in the shape this host stores them (`_Log`), with the
ids, clocks and durations a real run mints, so "a replay against its source"
is the same trajectory under fresh run-scoped values.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wopeval import evals

TENANT = "acme"
AGENT = "conformance.scripted-agent"
COUNTER = "conformance.eval:counter"
_fresh = itertools.count()
Call = tuple[dict[str, Any], dict[str, Any]]
"""A tool call of the scripted agent: its args, and what the tool answered."""


def _mint(kind: str) -> str:
    return f"{kind}{next(_fresh):028x}"


@dataclass
class _Log:
    """Appends events the way the host writes them: fresh ids, a clock, gapless sequences."""

    run_id: str = field(default_factory=lambda: f"{TENANT}/{_mint('r')}")
    node: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)

    def add(self, event_type: str, payload: dict[str, Any]) -> dict[str, Any]:
        sequence = len(self.events)
        doc: dict[str, Any] = {
            "eventId": _mint("e"),
            "runId": self.run_id,
            "type": event_type,
            "payload": payload,
            "timestamp": f"2025-05-0{1 + sequence % 9}T10:00:{sequence % 60:02d}.{next(_fresh)}Z",
            "sequence": sequence,
            "schemaVersion": 1,
        }
        if self.node is not None:
            doc["nodeId"] = self.node
        self.events.append(doc)
        return doc

    def run(self, complete: bool = True) -> evals.LoggedRun:
        return evals.LoggedRun(self.run_id, self.events, complete=complete)


def _owner() -> dict[str, Any]:
    return {"tenant": TENANT, "subject": {"issuer": "urn:wopeval:api-key", "subjectId": "key-1"}}


def _invocation(log: _Log, calls: list[Call], answer: Any) -> None:
    """One scripted-agent invocation: each `(args, outcome)` call, then the decision."""
    invocation = _mint("i")
    log.add(
        "agent.invocation-started",
        {"invocationId": invocation, "agentId": AGENT, "source": "run-api"},
    )
    for args, outcome in calls:
        call = _mint("c")
        log.add(
            "agent.tool-called",
            {"agentId": AGENT, "toolName": COUNTER, "callId": call, "inputs": args},
        )
        status = "error" if "error" in outcome else "ok"
        returned = {
            "agentId": AGENT,
            "toolName": COUNTER,
            "callId": call,
            "status": status,
            "durationMs": next(_fresh) % 50,
            **outcome,
        }
        log.add("agent.tool-returned", returned)
    log.add("agent.decided", {"agentId": AGENT, "decision": answer})
    log.add(
        "agent.invocation-completed",
        {"invocationId": invocation, "agentId": AGENT, "outcome": "completed"},
    )


def _inc(count: int) -> Call:
    return {"op": "inc", "key": "k"}, {"outcome": {"key": "k", "count": count}}


def _read(key: str, count: int) -> Call:
    return {"op": "read", "key": key}, {"outcome": {"key": key, "count": count}}


MISS = {"error": {"code": "fixture_miss", "message": "no recorded call matches"}}


def workflow_log(calls: list[Call], answer: Any = "done") -> _Log:
    log = _Log()
    log.add(
        "run.started",
        {"workflowId": "conformance-agent-counter", "owner": _owner(), "transport": "rest"},
    )
    log.node = "agent"
    log.add("node.started", {"nodeId": "agent", "nodeType": "core.agent"})
    _invocation(log, calls, answer)
    log.add("node.completed", {"nodeId": "agent", "outputs": {"decision": answer}})
    log.node = None
    log.add("run.completed", {"outputs": {"agent": {"decision": answer}}})
    return log


def eval_log(
    calls: list[Call],
    *,
    answer: Any = "done",
    passed: bool = True,
    fixture_runs: dict[str, str] | None = None,
) -> _Log:
    """An eval run of one task, `record`; the task latencies differ on every run."""
    log = _Log()
    log.add(
        "run.started", {"workflowId": "acme.evals.diff", "owner": _owner(), "transport": "rest"}
    )
    started: dict[str, Any] = {
        "suiteId": "acme.evals.diff",
        "suiteVersion": "1.0.0",
        "taskCount": 1,
        "modes": ["golden"],
    }
    if fixture_runs is not None:
        started["fixtureRuns"] = fixture_runs
    log.add("eval.started", started)
    _invocation(log, calls, answer)
    latency = next(_fresh) % 90
    score = 1.0 if passed else 0.0
    log.add(
        "eval.scored",
        {"taskId": "record", "score": score, "passed": passed, "latencyMs": latency, "x-trials": 1},
    )
    log.add(
        "eval.completed",
        {"aggregateScore": score, "passed": passed, "taskCount": 1, "passedCount": int(passed)},
    )
    task = {"taskId": "record", "score": score, "passed": passed, "latencyMs": latency}
    summary = {
        "suiteId": "acme.evals.diff",
        "suiteVersion": "1.0.0",
        "aggregateScore": score,
        "passed": passed,
        "taskCount": 1,
        "passedCount": int(passed),
        "tasks": [task],
    }
    log.add("run.completed", {"outputs": {"evalSummary": summary}})
    return log


def fork_of(source: _Log) -> _Log:
    """A replay fork as `engine/runs/replay.py` writes it: the log again, under new identity."""
    fork = _Log()
    for doc in source.events:
        copied = copy.deepcopy(doc)
        copied["runId"] = fork.run_id
        copied["eventId"] = _mint("e")
        fork.events.append(copied)
    return fork


def prefix(log: _Log, length: int) -> evals.LoggedRun:
    """What a reader finds of `log` while its run is still writing it."""
    return evals.LoggedRun(log.run_id, log.events[:length], complete=False)


def _ops(diff: Any) -> list[tuple[int, str]]:
    return [(entry.seq, entry.op) for entry in diff.eventDiffs]


# ── identical logs ───────────────────────────────────────────────────


def test_identical_logs_diff_to_null_and_nothing() -> None:
    run = workflow_log([_inc(1)]).run()
    diff = evals.diff_logs(run, run)
    assert diff.to_wire() == {
        "a": run.run_id,
        "b": run.run_id,
        "divergedAtSeq": None,
        "eventDiffs": [],
        "stateDiff": {},
    }


def test_a_replay_fork_has_no_divergence_from_its_source() -> None:
    source = workflow_log([_inc(1), _read("k", 1)])
    fork = fork_of(source)
    diff = evals.diff_logs(source.run(), fork.run())
    assert (diff.divergedAtSeq, diff.eventDiffs, diff.stateDiff) == (None, [], {})
    assert (diff.a, diff.b) == (source.run_id, fork.run_id)
    assert diff.truncated is None


def test_a_replay_eval_run_differs_from_its_source_only_in_what_it_was_given() -> None:
    # Fresh call and invocation ids, fresh durations and latencies: none of it is a divergence.
    source = eval_log([_inc(7), _read("k", 7)])
    replay = eval_log([_inc(7), _read("k", 7)], fixture_runs={"record": source.run_id})
    diff = evals.diff_logs(source.run(), replay.run())
    assert _ops(diff) == [(1, "changed")]
    (entry,) = diff.eventDiffs
    assert entry.aEvent == source.events[1]
    assert entry.bEvent == replay.events[1]
    assert diff.stateDiff == {}


def test_a_drifted_eval_run_diverges_at_the_drifted_call() -> None:
    given = {"record": f"{TENANT}/{_mint('r')}"}
    replay = eval_log([_inc(7), _read("k", 7)], fixture_runs=given)
    drift = eval_log(
        [_inc(7), ({"op": "read", "key": "other"}, MISS)],
        answer={"error": "miss"},
        passed=False,
        fixture_runs=given,
    )
    diff = evals.diff_logs(replay.run(), drift.run())
    called = 5
    assert replay.events[called]["type"] == "agent.tool-called"
    assert diff.divergedAtSeq == called
    # The call, its miss, the decision and the scores differ; the invocation still completed.
    assert replay.events[8]["type"] == "agent.invocation-completed"
    assert _ops(diff) == [(seq, "changed") for seq in (5, 6, 7, 9, 10, 11)]
    first = diff.eventDiffs[0]
    assert first.aEvent == replay.events[called]
    assert first.bEvent == drift.events[called]
    assert set(diff.stateDiff) == {"outputs"}
    assert diff.stateDiff["outputs"].a == replay.events[-1]["payload"]["outputs"]
    assert diff.stateDiff["outputs"].b == drift.events[-1]["payload"]["outputs"]


# ── what is and is not compared ──────────────────────────────────────

Edit = Callable[[dict[str, Any]], None]

EXCLUDED: dict[str, tuple[int, Edit]] = {
    "eventId": (0, lambda e: e.update(eventId="other-event-id-000000")),
    "runId": (0, lambda e: e.update(runId=f"{TENANT}/other")),
    "timestamp": (2, lambda e: e.update(timestamp="2031-01-01T00:00:00Z")),
    "causationId": (3, lambda e: e.update(causationId="another-event-0000000")),
    "durationMs": (4, lambda e: e["payload"].update(durationMs=99_999)),
    "latencyMs": (7, lambda e: e["payload"].update(latencyMs=99_999)),
    "summary latencyMs": (
        9,
        lambda e: e["payload"]["outputs"]["evalSummary"]["tasks"][0].update(latencyMs=99_999),
    ),
}
COMPARED: dict[str, tuple[int, Edit]] = {
    "type": (6, lambda e: e.update(type="agent.handed-off")),
    "nodeId": (2, lambda e: e.update(nodeId="elsewhere")),
    "schemaVersion": (2, lambda e: e.update(schemaVersion=2)),
    "tool args": (3, lambda e: e["payload"]["inputs"].update(op="dec")),
    "tool outcome": (4, lambda e: e["payload"]["outcome"].update(count=8)),
    "agentId": (2, lambda e: e["payload"].update(agentId="another.agent")),
    "fixtureRuns": (1, lambda e: e["payload"].update(fixtureRuns={"record": f"{TENANT}/x"})),
    "score": (7, lambda e: e["payload"].update(score=0.5)),
    "a vendor field": (8, lambda e: e["payload"].update({"x-note": 1})),
    "summary score": (
        9,
        lambda e: e["payload"]["outputs"]["evalSummary"]["tasks"][0].update(score=0.5),
    ),
    "a summary that is no object": (9, lambda e: e["payload"]["outputs"].update(evalSummary="x")),
}


def _one_call_eval() -> _Log:
    return eval_log([_inc(7)], fixture_runs={"record": f"{TENANT}/source"})


@pytest.mark.parametrize("name", sorted(EXCLUDED))
def test_run_scoped_fields_are_not_compared(name: str) -> None:
    a = _one_call_eval()
    b = fork_of(a)
    seq, edit = EXCLUDED[name]
    edit(b.events[seq])
    assert evals.diff_logs(a.run(), b.run()).eventDiffs == []


@pytest.mark.parametrize("name", sorted(COMPARED))
def test_everything_else_is_compared(name: str) -> None:
    a = _one_call_eval()
    b = fork_of(a)
    seq, edit = COMPARED[name]
    edit(b.events[seq])
    diff = evals.diff_logs(a.run(), b.run())
    assert _ops(diff) == [(seq, "changed")]


def test_minted_ids_compare_by_the_order_they_first_appear() -> None:
    # Fresh ids in the same pattern are the same trajectory...
    a = workflow_log([_inc(1), _inc(2)])
    b = workflow_log([_inc(1), _inc(2)])
    assert evals.diff_logs(a.run(), b.run()).eventDiffs == []
    # ...but a return naming another call than the one it answers is a divergence.
    second_call = b.events[5]["payload"]["callId"]
    b.events[4]["payload"]["callId"] = second_call
    assert _ops(evals.diff_logs(a.run(), b.run())) == [(4, "changed")]


def test_a_longer_log_shows_its_extra_events_as_added_or_removed() -> None:
    short = workflow_log([_inc(1)])
    long = workflow_log([_inc(1), _inc(2)])
    ahead = evals.diff_logs(long.run(), short.run())
    behind = evals.diff_logs(short.run(), long.run())
    tail = range(len(short.events), len(long.events))
    assert [op for _, op in _ops(ahead)][-len(tail) :] == ["removed"] * len(tail)
    assert [op for _, op in _ops(behind)][-len(tail) :] == ["added"] * len(tail)
    removed = ahead.eventDiffs[-1].to_wire()
    added = behind.eventDiffs[-1].to_wire()
    assert removed == {"seq": tail[-1], "op": "removed", "aEvent": long.events[-1]}
    assert added == {"seq": tail[-1], "op": "added", "bEvent": long.events[-1]}


# ── prefixes ─────────────────────────────────────────────────────────


def test_an_in_flight_prefix_is_truncated_and_compared_only_as_far_as_it_goes() -> None:
    done = eval_log([_inc(7), _read("k", 7)])
    running = prefix(eval_log([_inc(7), _read("k", 7)]), 5)
    diff = evals.diff_logs(running, done.run())
    assert diff.truncated is True
    assert diff.to_wire()["truncated"] is True
    # Sequences 0..4 agree; past the prefix the active run may yet write anything.
    assert diff.eventDiffs == []
    assert diff.divergedAtSeq is None
    assert diff.stateDiff["status"].to_wire() == {"a": "running", "b": "completed"}


def test_a_difference_inside_the_prefix_is_still_found() -> None:
    done = eval_log([_inc(7), _read("k", 7)])
    running = prefix(eval_log([_inc(8), _read("k", 8)]), 5)
    diff = evals.diff_logs(done.run(), running)
    assert (diff.truncated, _ops(diff)) == (True, [(4, "changed")])


def test_a_complete_log_shorter_than_a_prefix_is_settled_where_it_ends() -> None:
    done = workflow_log([_inc(1)])
    longer = workflow_log([_inc(1), _inc(2)])
    diff = evals.diff_logs(done.run(), prefix(longer, len(longer.events)))
    # `done` has ended: what the prefix holds past its end is known to be only in `b`.
    assert diff.truncated is True
    assert diff.eventDiffs[-1].seq == len(longer.events) - 1
    assert diff.eventDiffs[-1].op == "added"


def test_the_listed_differences_are_bounded() -> None:
    a = workflow_log([_inc(n) for n in range(6)])
    b = workflow_log([_inc(n + 1) for n in range(6)])
    every = evals.diff_logs(a.run(), b.run())
    assert len(every.eventDiffs) == 6
    assert every.truncated is None
    exactly = evals.diff_logs(a.run(), b.run(), max_event_diffs=6)
    assert (len(exactly.eventDiffs), exactly.truncated) == (6, None)
    bounded = evals.diff_logs(a.run(), b.run(), max_event_diffs=2)
    assert bounded.eventDiffs == every.eventDiffs[:2]
    assert bounded.truncated is True


# ── end states ───────────────────────────────────────────────────────


def test_the_state_diff_names_status_outputs_and_error() -> None:
    completed = workflow_log([_inc(1)])
    failed = workflow_log([_inc(1)])
    error = {"code": "agent_failed", "message": "agent raised"}
    failed.events[-1].update(type="run.failed", payload={"error": error})
    diff = evals.diff_logs(completed.run(), failed.run())
    assert {name: change.to_wire() for name, change in diff.stateDiff.items()} == {
        "status": {"a": "completed", "b": "failed"},
        "outputs": {"a": {"agent": {"decision": "done"}}},
        "error": {"b": error},
    }


def test_an_empty_log_folds_to_pending() -> None:
    empty = _Log()
    diff = evals.diff_logs(empty.run(complete=False), workflow_log([]).run())
    assert diff.stateDiff["status"].to_wire() == {"a": "pending", "b": "completed"}


# ── properties ───────────────────────────────────────────────────────

_payload_values = st.one_of(st.integers(-5, 5), st.text(max_size=3), st.booleans(), st.none())
_payloads = st.dictionaries(
    st.sampled_from(["op", "key", "count", "x-a"]), _payload_values, max_size=3
)
_types = st.sampled_from(
    [
        "agent.tool-called",
        "agent.tool-returned",
        "agent.decided",
        "node.started",
        "eval.scored",
        "run.completed",
    ]
)
_steps = st.lists(st.tuples(_types, _payloads), max_size=12)


def _build(steps: list[tuple[str, dict[str, Any]]]) -> _Log:
    log = _Log()
    calls: list[str] = []
    for event_type, payload in steps:
        body = dict(payload)
        if event_type in ("agent.tool-called", "agent.tool-returned"):
            # Returns answer the latest call; a host mints a fresh id per call.
            if event_type == "agent.tool-called" or not calls:
                calls.append(_mint("c"))
            body["callId"] = calls[-1]
        if event_type == "agent.tool-returned":
            body["durationMs"] = next(_fresh) % 100
        log.add(event_type, body)
    return log


@given(_steps)
def test_a_log_never_differs_from_itself_nor_from_a_fork_of_it(
    steps: list[tuple[str, dict[str, Any]]],
) -> None:
    log = _build(steps)
    for other in (log, fork_of(log), _build(steps)):
        diff = evals.diff_logs(log.run(), other.run())
        assert (diff.divergedAtSeq, diff.eventDiffs, diff.stateDiff) == (None, [], {})


@given(_steps.filter(bool), st.data())
def test_the_divergence_is_the_first_changed_position(
    steps: list[tuple[str, dict[str, Any]]], data: st.DataObject
) -> None:
    a = _build(steps)
    b = fork_of(a)
    at = data.draw(st.integers(0, len(steps) - 1))
    b.events[at]["payload"]["x-changed"] = True
    diff = evals.diff_logs(a.run(), b.run())
    assert diff.divergedAtSeq == at
    assert _ops(diff) == [(at, "changed")]
    # Swapping the sides swaps the events and keeps the position.
    back = evals.diff_logs(b.run(), a.run())
    assert back.divergedAtSeq == at
    assert (back.eventDiffs[0].aEvent, back.eventDiffs[0].bEvent) == (
        diff.eventDiffs[0].bEvent,
        diff.eventDiffs[0].aEvent,
    )


@given(_steps, _steps)
def test_swapping_the_sides_swaps_added_and_removed(
    left: list[tuple[str, dict[str, Any]]], right: list[tuple[str, dict[str, Any]]]
) -> None:
    a, b = _build(left), _build(right)
    forward = {seq: op for seq, op in _ops(evals.diff_logs(a.run(), b.run()))}
    backward = {seq: op for seq, op in _ops(evals.diff_logs(b.run(), a.run()))}
    swap = {"added": "removed", "removed": "added", "changed": "changed"}
    assert backward == {seq: swap[op] for seq, op in forward.items()}
    first = min(forward, default=None)
    assert evals.diff_logs(a.run(), b.run()).divergedAtSeq == first


def test_a_workflow_runs_outputs_are_compared_whole_even_if_shaped_like_a_summary() -> None:
    """Only an eval run's summary has its task latencies left out; a workflow's output is data."""
    a = workflow_log([_inc(7)])
    a.events[-1]["payload"]["outputs"] = {"evalSummary": {"tasks": [{"latencyMs": 1}]}}
    b = fork_of(a)
    b.events[-1]["payload"]["outputs"]["evalSummary"]["tasks"][0]["latencyMs"] = 2
    assert _ops(evals.diff_logs(a.run(), b.run())) == [(len(a.events) - 1, "changed")]
