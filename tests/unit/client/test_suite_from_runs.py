"""`client/_suite_from_runs.py`: the suite and fixture-runs map made from recorded runs."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import JsonValue

from wopeval import client, evals
from wopeval.client import RecordedRun, TaskIdRule, build_suite

HEX = "0123456789abcdef0123456789abcdef"


def _run(
    hex_id: str = HEX,
    inputs: JsonValue = None,
    tags: tuple[str, ...] = (),
    decision: JsonValue = "yes",
    hash_only: bool = False,
) -> RecordedRun:
    return RecordedRun(f"prod/{hex_id}", inputs or {"q": 1}, tags, decision, hash_only)


def _build(runs: list[RecordedRun], **overrides: Any) -> client.SuiteFromRuns:
    options: dict[str, Any] = {
        "suite_id": "acme.evals.prod",
        "version": "1.2.3",
        "agent_id": "acme.agent",
        "expect": "exact",
        "task_ids": TaskIdRule(),
    }
    return build_suite(runs, **(options | overrides))


def test_one_task_per_run_with_its_inputs_and_decision_and_the_map_back_to_the_run() -> None:
    other = "fedcba9876543210fedcba9876543210"
    made = _build([_run(), _run(other, inputs={"q": 2}, decision={"a": [1]})])
    document = made.suite.to_document()
    assert document == {
        "suiteId": "acme.evals.prod",
        "version": "1.2.3",
        "targetAgentId": "acme.agent",
        "modes": ["golden", "regression"],
        "tasks": [
            {
                "taskId": "run-0123456789ab",
                "input": {"q": 1},
                "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "yes"}},
            },
            {
                "taskId": "run-fedcba987654",
                "input": {"q": 2},
                "expected": {"kind": "golden", "match": {"strategy": "exact", "value": {"a": [1]}}},
            },
        ],
    }
    assert made.fixture_runs == {
        "run-0123456789ab": f"prod/{HEX}",
        "run-fedcba987654": f"prod/{other}",
    }


@pytest.mark.parametrize(
    "decision", ["refund", {"action": "refund", "amount": 3}, [1, 2], 7, None, ""]
)
def test_each_strategy_passes_the_recorded_decision_on_the_hosts_graders(
    decision: JsonValue,
) -> None:
    for expect in client.EXPECT_STRATEGIES:
        task = _build([_run(decision=decision)], expect=expect).suite.tasks[0]
        assert evals.grade_task(task.expected, decision, []).passed, expect


def test_json_subset_lets_the_decision_gain_members_and_exact_does_not() -> None:
    recorded: JsonValue = {"action": "refund"}
    grown: JsonValue = {"action": "refund", "note": "new"}
    subset = _build([_run(decision=recorded)], expect="json-subset").suite.tasks[0]
    exact = _build([_run(decision=recorded)], expect="exact").suite.tasks[0]
    assert evals.grade_task(subset.expected, grown, []).passed
    assert not evals.grade_task(subset.expected, {"action": "deny"}, []).passed
    assert not evals.grade_task(exact.expected, grown, []).passed


def test_none_passes_any_decision_with_an_rfc_0081_strategy() -> None:
    task = _build([_run()], expect="none").suite.tasks[0]
    assert task.expected.match is not None
    assert (task.expected.match.strategy, task.expected.match.value) == ("contains", "")
    assert evals.grade_task(task.expected, {"anything": True}, []).passed


def test_a_hash_only_decision_is_refused_unless_nothing_is_expected() -> None:
    hashed = _run(decision=None, hash_only=True)
    for expect in ("exact", "json-subset"):
        with pytest.raises(client.ClientError, match=r"only its decision's hash.*--expect none"):
            _build([hashed], expect=expect)
    assert len(_build([hashed], expect="none").suite.tasks) == 1


def test_task_ids_from_a_tag_remainder_or_an_input_path() -> None:
    run = _run(
        inputs={"order": {"id": "ord-17", "n": 4}, "flag": True}, tags=("prod", "case=refund")
    )
    assert TaskIdRule.parse("tag:case=").task_id(run) == "refund"
    assert TaskIdRule.parse("input:order.id").task_id(run) == "ord-17"
    assert TaskIdRule.parse("input:order.n").task_id(run) == "4"
    for rule, why in [
        ("tag:ticket=", "no tag starting with 'ticket='"),
        ("tag:case=refund", "no tag starting with"),  # an empty remainder names nothing
        ("input:order.missing", r"no string or integer at inputs\.order\.missing"),
        ("input:flag", r"no string or integer at inputs\.flag"),
        ("input:order", r"no string or integer at inputs\.order"),
    ]:
        with pytest.raises(client.ClientError, match=f"run prod/{HEX} has {why}"):
            TaskIdRule.parse(rule).task_id(run)
    two = _run(tags=("case=a", "case=b"))
    with pytest.raises(client.ClientError, match="2 tags starting with 'case='"):
        TaskIdRule.parse("tag:case=").task_id(two)
    upper = _run(tags=("case=Refund",))
    with pytest.raises(client.ClientError, match="'Refund' is not a task id"):
        TaskIdRule.parse("tag:case=").task_id(upper)


@pytest.mark.parametrize("text", ["tag:", "input", "run:x", "header:x"])
def test_a_task_id_rule_is_tag_or_input_with_a_key(text: str) -> None:
    with pytest.raises(ValueError, match="tag:PREFIX or input:PATH"):
        TaskIdRule.parse(text)


def test_two_runs_making_one_task_id_are_refused_naming_both() -> None:
    other = "fedcba9876543210fedcba9876543210"
    runs = [_run(tags=("case=a",)), _run(other, tags=("case=a",))]
    with pytest.raises(
        client.ClientError, match=f"runs prod/{HEX} and prod/{other} both make task 'a'"
    ):
        _build(runs, task_ids=TaskIdRule.parse("tag:case="))


def test_the_suite_is_validated_as_the_host_would() -> None:
    with pytest.raises(client.ClientError, match="not valid: suiteId: "):
        _build([_run()], suite_id="Not A Suite")
    with pytest.raises(client.ClientError, match="not valid: version: "):
        _build([_run()], version="1.0")


def test_a_run_is_read_from_its_snapshot_and_its_single_node_decision() -> None:
    snapshot = {"runId": f"prod/{HEX}", "inputs": {"q": 1}, "tags": ["prod"]}
    run = client.recorded_run(snapshot, {"agent": {"decision": {"ok": True}}, "noop": {}})
    assert run == RecordedRun(f"prod/{HEX}", {"q": 1}, ("prod",), {"ok": True})
    bare = client.recorded_run({"runId": f"prod/{HEX}"}, {"agent": {"decision": None}})
    assert (bare.inputs, bare.tags, bare.decision, bare.hash_only) == ({}, (), None, False)
    fixed = client.recorded_run(snapshot, {"agent": {"decision": 1}}, {"agent": {"own": 2}})
    assert fixed.inputs == {"own": 2}
    other_node = client.recorded_run(snapshot, {"agent": {"decision": 1}}, {"first": {"own": 2}})
    assert other_node.inputs == {"q": 1}
    hashed = client.recorded_run(snapshot, {"agent": {"decisionHash": "sha256:00"}})
    assert hashed.hash_only
    with pytest.raises(client.ClientError, match=r"2 node decisions \(a, b\)"):
        client.recorded_run(snapshot, {"a": {"decision": 1}, "b": {"decision": 2}})
    with pytest.raises(client.ClientError, match=r"0 node decisions \(none\)"):
        client.recorded_run(snapshot, {"noop": {}})
