"""The pure parts of the client package: request bodies, --trials versions, summaries, watches."""

from __future__ import annotations

import pytest

from wopeval import client as flow
from wopeval.wire.events import EventDoc
from wopeval.wire.suite import parse_suite


def test_request_body_sends_rfc_0251_0252_members_only_when_used() -> None:
    plain = flow.EvalRequest("s@1.0.0", "agent")
    assert plain.body() == {"mode": "eval", "evalSuiteRef": "s@1.0.0", "agentId": "agent"}
    full = flow.EvalRequest("s@1.0.0", "agent", ("golden", "regression"), "t/r", {"k": "t/s"})
    assert full.body() == {
        "mode": "eval",
        "evalSuiteRef": "s@1.0.0",
        "agentId": "agent",
        "evalModes": ["golden", "regression"],
        "baselineRunId": "t/r",
        "fixtureRuns": {"k": "t/s"},
    }


def test_default_modes_name_regression_with_a_baseline_and_nothing_without() -> None:
    # Without a baseline no evalModes is sent: the host's default, no RFC 0251 property.
    assert flow.default_modes(None) is None
    assert flow.default_modes("t/r") == ("golden", "regression")


@pytest.mark.parametrize("text", ["", "golden,nope", "golden,golden", " , "])
def test_parse_modes_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="modes"):
        flow.parse_modes(text)


def test_parse_fixture_runs() -> None:
    assert flow.parse_fixture_runs(["a=t/1", "b=t/2=x"]) == {"a": "t/1", "b": "t/2=x"}
    for bad in (["a"], ["=t/1"], ["a="], ["a=t/1", "a=t/2"]):
        with pytest.raises(ValueError, match="from-run"):
            flow.parse_fixture_runs(bad)


@pytest.mark.parametrize(
    ("version", "trials", "derived"),
    [("1.0.0", 4, "1.0.1000004"), ("2.3.7", 100, "2.3.1007100"), ("0.0.1", 1, "0.0.1001001")],
)
def test_trials_version(version: str, trials: int, derived: str) -> None:
    assert flow.trials_version(version, trials) == derived


def test_trials_version_refuses_a_non_semver() -> None:
    with pytest.raises(flow.ClientError):
        flow.trials_version("1.0", 3)


def test_with_trials_overrides_suite_and_task_trials_and_stays_valid() -> None:
    document = {
        "suiteId": "unit.flow.evals.trials",
        "version": "1.0.0",
        "modes": ["golden"],
        "trials": 2,
        "tasks": [
            {"taskId": "a", "input": 1, "expected": {"kind": "golden",
             "match": {"strategy": "exact", "value": 1}}, "trials": 9},
            {"taskId": "b", "input": 2, "expected": {"kind": "golden",
             "match": {"strategy": "exact", "value": 2}}},
        ],
    }  # fmt: skip
    derived = flow.with_trials(document, 5)
    suite = parse_suite(derived)
    assert suite.version == "1.0.1000005"
    assert suite.trials == 5
    assert [t.trials for t in suite.tasks] == [5, None]
    assert document["version"] == "1.0.0"  # the original is untouched


def test_summary_from_wire_ignores_members_it_does_not_know() -> None:
    summary = flow.summary_from_wire(
        {
            "suiteId": "unit.flow.evals.wire",
            "suiteVersion": "1.0.0",
            "aggregateScore": 0.5,
            "passed": False,
            "taskCount": 1,
            "passedCount": 0,
            "tasks": [{"taskId": "a", "score": 0.5, "passed": False, "vendorExtra": 1}],
            "regression": {
                "baselineRunId": "t/r",
                "scoreDelta": -0.5,
                "verdict": "regressed",
                "tasks": [{"taskId": "a", "baselineScore": 1, "score": 0.5, "delta": -0.5,
                           "verdict": "regressed", "other": True}],
                "diffRef": "x",
            },
            "anotherHostField": {"x": 1},
        }
    )  # fmt: skip
    assert summary.regression is not None
    assert summary.regression.verdict == "regressed"
    assert summary.tasks[0].taskId == "a"


def test_summary_from_wire_refuses_what_is_not_a_summary() -> None:
    with pytest.raises(flow.ClientError, match="eval summary"):
        flow.summary_from_wire({"suiteId": "nope"})


def test_run_watch_counts_trials_and_scored_tasks() -> None:
    watch = flow.RunWatch(run_id="t/r", agent_id="me")
    events = [
        {"sequence": 0, "type": "eval.started", "payload": {"taskCount": 2}},
        {"sequence": 1, "type": "agent.invocation-completed", "payload": {"agentId": "me"}},
        {"sequence": 2, "type": "agent.invocation-completed", "payload": {"agentId": "helper"}},
        {"sequence": 3, "type": "eval.scored",
         "payload": {"taskId": "a", "passed": True, "x-trials": 3}},
        {"sequence": 4, "type": "eval.scored", "payload": {"taskId": "b", "passed": False}},
    ]  # fmt: skip
    for event in events:
        envelope = {"eventId": "e", "runId": "t/r", "timestamp": "2026-01-01T00:00:00Z"}
        watch.apply(EventDoc.model_validate({**envelope, "schemaVersion": 1, **event}))
    assert (watch.task_count, watch.passed_tasks, watch.failed_tasks) == (2, 1, 1)
    assert watch.trials_done == 1  # the delegate's invocation is not a trial
    assert watch.trials_seen == 4  # 3 + 1 from the scored tasks
    assert watch.last_sequence == 4
