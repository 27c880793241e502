"""A suite made from recorded workflow runs: one task per run (`wopeval suites from-runs`).

Pure: it takes the runs as read from the wire (`RecordedRun`) and returns the
suite document and its fixture-runs map (`{taskId: runId}`, RFC 0252 §B
`fixtureRuns`), so replaying each task from its own run reproduces what the
run did. Each task's `input` is the run's inputs and its `expected` is the
run's decision under the chosen strategy (RFC 0081 §A `match`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import JsonValue

from wopeval.client._wire import ClientError
from wopeval.wire import errors
from wopeval.wire.suite import TASK_ID_PATTERN, Suite, parse_suite

ExpectStrategy = Literal["auto", "exact", "json-match", "json-subset", "none"]
EXPECT_STRATEGIES: tuple[str, ...] = get_args(ExpectStrategy)
SUITE_MODES = ("golden", "regression")
"""A suite made from runs is graded on their decisions, and compared with earlier eval runs."""
DEFAULT_TASK_ID_CHARS = 12


@dataclass(frozen=True)
class RecordedRun:
    """A completed workflow run as a suite task needs it."""

    run_id: str
    inputs: JsonValue
    tags: tuple[str, ...]
    decision: JsonValue
    hash_only: bool = False
    """The host showed only the decision's hash (the agent's `wireContent` is `hash`)."""


def recorded_run(
    snapshot: Mapping[str, Any],
    outputs: Mapping[str, Any],
    node_inputs: Mapping[str, JsonValue] | None = None,
) -> RecordedRun:
    """The run a snapshot and its `outputs` (`{nodeId: {"decision": ...}}`) describe.

    A task replays one agent, so the run must hold exactly one node decision.
    `node_inputs` are the workflow's nodes that give their agent an input of their
    own (`Node.inputs`); the agent of any other node was given the run's inputs.
    """
    run_id = str(snapshot["runId"])
    decided = {node: value for node, value in outputs.items() if isinstance(value, dict) and value}
    if len(decided) != 1:
        nodes = ", ".join(sorted(decided)) or "none"
        raise ClientError(
            f"run {run_id} has {len(decided)} node decisions ({nodes}); a suite task "
            "replays one agent, so each run must have exactly one"
        )
    ((node, node_output),) = decided.items()
    fixed = node_inputs or {}
    return RecordedRun(
        run_id=run_id,
        inputs=fixed[node] if node in fixed else snapshot.get("inputs", {}),
        tags=tuple(snapshot.get("tags") or ()),
        decision=node_output.get("decision"),
        hash_only="decision" not in node_output and "decisionHash" in node_output,
    )


@dataclass(frozen=True)
class TaskIdRule:
    """`--task-id-from`: where each run's task id comes from (None: from the run id)."""

    source: Literal["run", "tag", "input"] = "run"
    key: str = ""
    """The tag prefix, or the dotted path into the run's inputs."""

    @classmethod
    def parse(cls, text: str | None) -> TaskIdRule:
        """`tag:PREFIX` or `input:PATH`; ValueError otherwise."""
        if text is None:
            return cls()
        source, _, key = text.partition(":")
        if source not in ("tag", "input") or not key:
            raise ValueError("must be tag:PREFIX or input:PATH (e.g. tag:case= or input:order.id)")
        return cls("tag" if source == "tag" else "input", key)

    def task_id(self, run: RecordedRun) -> str:
        """The run's task id; ClientError when the run lacks it or it is not a task id."""
        if self.source == "run":
            opaque = re.sub(r"[^a-z0-9]", "", run.run_id.rpartition("/")[2].lower())
            return f"run-{opaque[:DEFAULT_TASK_ID_CHARS]}"
        if self.source == "tag":
            found = [t.removeprefix(self.key) for t in run.tags if t.startswith(self.key)]
            if len(found) > 1:
                raise ClientError(
                    f"run {run.run_id} has {len(found)} tags starting with {self.key!r}"
                )
            value = found[0] if found and found[0] else None
            where = f"no tag starting with {self.key!r}"
        else:
            value = _at_path(run.inputs, self.key)
            where = f"no string or integer at inputs.{self.key}"
        if value is None:
            raise ClientError(f"run {run.run_id} has {where} (--task-id-from)")
        if not re.fullmatch(TASK_ID_PATTERN, value):
            raise ClientError(
                f"run {run.run_id}: {value!r} is not a task id (lowercase letters, digits "
                "and '-', starting with a letter or digit)"
            )
        return value


def _at_path(inputs: JsonValue, path: str) -> str | None:
    value = inputs
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    return str(value)


def expected_for(run: RecordedRun, expect: ExpectStrategy) -> dict[str, Any]:
    """The task's `expected`: the run's decision as `exact`, `json-match` or `json-subset`
    (docs/graders.md), `auto` choosing by the decision's type (`evals.strategy_for_decision`),
    or, with `none`, a `contains ""` that every decision passes (RFC 0081 §A strategies only,
    so any host grades it)."""
    if expect == "none":
        return {"kind": "golden", "match": {"strategy": "contains", "value": ""}}
    if run.hash_only:
        raise ClientError(
            f"run {run.run_id} recorded only its decision's hash (the agent's wireContent is "
            "hash), so there is no value to expect: use --expect none to replay its tool "
            "calls without checking the decision"
        )
    if expect == "auto":
        from wopeval import evals  # the grading rules load only for a suite being made

        strategy: str = evals.strategy_for_decision(run.decision)
    else:
        strategy = expect
    return {"kind": "golden", "match": {"strategy": strategy, "value": run.decision}}


@dataclass(frozen=True)
class SuiteFromRuns:
    suite: Suite
    fixture_runs: dict[str, str]
    """`{taskId: runId}`: each task replayed from the run it was made from."""


def build_suite(
    runs: Sequence[RecordedRun],
    *,
    suite_id: str,
    version: str,
    agent_id: str,
    expect: ExpectStrategy,
    task_ids: TaskIdRule,
) -> SuiteFromRuns:
    """One task per run, validated as the host would validate it (`parse_suite`)."""
    fixture_runs: dict[str, str] = {}
    tasks: list[dict[str, Any]] = []
    for run in runs:
        task_id = task_ids.task_id(run)
        if task_id in fixture_runs:
            raise ClientError(
                f"runs {fixture_runs[task_id]} and {run.run_id} both make task {task_id!r}"
            )
        fixture_runs[task_id] = run.run_id
        tasks.append(
            {"taskId": task_id, "input": run.inputs, "expected": expected_for(run, expect)}
        )
    document = {
        "suiteId": suite_id,
        "version": version,
        "targetAgentId": agent_id,
        "modes": list(SUITE_MODES),
        "tasks": tasks,
    }
    try:
        suite = parse_suite(document)
    except errors.ValidationFailed as exc:
        raise ClientError(f"the suite made from the runs is not valid: {exc.message}") from None
    return SuiteFromRuns(suite, fixture_runs)
