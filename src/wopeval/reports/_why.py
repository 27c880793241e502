"""Why a task failed, as every output shows it: pure renderers over the task routes' shapes.

`wopeval explain`, the reason lines under `eval` / `compare`, the JUnit failure
bodies and the HTML drill-down all read `TaskList` / `TaskDetail` as the host's
routes returned them and lay them out from here. Nothing is recomputed: the
reason, the grade's diff and each miss's argument diff are the host's, and the
host has already applied the agent's `wireContent` (what a route left out,
such as a `hash` agent's decision, is never shown). The only change made to a
value is cutting a long one short, saying so.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wopeval import evals
from wopeval.wire.summary import EvalSummary, TaskRegression, Verdict
from wopeval.wire.task_detail import (
    JudgeView,
    MissView,
    ModelCallView,
    PathChange,
    ServedAs,
    TaskDetail,
    TaskLine,
    TaskList,
    TraceCall,
    TrialDetail,
)

SERVED_LABELS: Mapping[ServedAs, str] = {"fixture": "replayed", "live": "live", "miss": "MISS"}
"""How a call's `servedBy` reads: a fixture replayed it, the live tool ran, or nothing matched."""

SIGNS = {"added": "+", "removed": "-", "changed": "~"}
"""A diff row's sign: only in the actual value, only in the expected one, or different."""

ABSENT = "(absent)"


@dataclass(frozen=True)
class RunWhy:
    """What a host's task routes said about one eval run: every task's line, some details."""

    listing: TaskList
    details: Mapping[str, TaskDetail] = field(default_factory=dict)
    """Task id → its detail, for the tasks that were fetched."""

    def line(self, task_id: str) -> TaskLine | None:
        return next((line for line in self.listing.tasks if line.taskId == task_id), None)


def needs_explaining(line: TaskLine, verdict: Verdict | str | None) -> bool:
    """A task worth a reason: it failed, regressed, was inconclusive, or some of its
    trials failed."""
    return (
        not line.passed
        or verdict in (Verdict.REGRESSED, Verdict.INCONCLUSIVE)
        or line.passedTrials < line.trials
    )


def more_trials_text(line: TaskLine | None) -> str | None:
    """For an inconclusive task: how many more trials would decide it (the host's line)."""
    if line is None or line.moreTrials is None:
        return None
    return line.moreTrials.note


def paired(summary: EvalSummary) -> dict[str, TaskRegression]:
    """The summary's paired tasks by id (empty without a baseline)."""
    if summary.regression is None:
        return {}
    return {task.taskId: task for task in summary.regression.tasks or []}


def explained_task_ids(summary: EvalSummary, listing: TaskList) -> list[str]:
    """The tasks of `listing` that need explaining, judged with the summary's verdicts."""
    verdicts = {task_id: pair.verdict for task_id, pair in paired(summary).items()}
    return [
        line.taskId for line in listing.tasks if needs_explaining(line, verdicts.get(line.taskId))
    ]


def tools_changed_text(line: TaskLine) -> str | None:
    """`MCP tools changed since the recording: …` for a task whose tools changed; else None."""
    if not line.toolsChanged:
        return None
    return "MCP tools changed since the recording: " + evals.describe_tool_changes(
        line.toolsChanged
    )


def marks(pair: TaskRegression | None) -> list[str]:
    """The multi-trial marks of a paired task: `p=0.43`, `flaky` (none for single trials)."""
    if pair is None:
        return []
    found = [] if pair.pValue is None else [f"p={pair.pValue:.3g}"]
    return found + (["flaky"] if pair.flaky else [])


# ── values ───────────────────────────────────────────────────────────


def json_text(value: Any, limit: int | None = None) -> str:
    """A JSON value as compact text in the agent's own key order, cut to `limit` characters."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return cut(text, limit)


def cut(text: str, limit: int | None) -> str:
    """`text`, or its first `limit` characters followed by how long it was."""
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters)"


def expected_text(expected: Any, limit: int | None = None) -> str:
    """A task's `expected` block in one line: `json-match {"action":"refund"}`, or its JSON."""
    match = expected.get("match") if isinstance(expected, dict) else None
    if isinstance(match, dict) and expected.get("kind") == "golden":
        strategy = match.get("strategy", "exact")
        if "value" in match:
            return f"{strategy} {json_text(match['value'], limit)}"
        if "paths" in match:
            return f"{strategy} {json_text(match['paths'], limit)}"
    return json_text(expected, limit)


def actual_text(trial: TrialDetail, limit: int | None = None) -> str:
    """The trial's decision, or its hash when the agent's content stays on the host."""
    if trial.decision is not None:
        return json_text(trial.decision, limit)
    if trial.decisionHash is not None:
        return f"{trial.decisionHash} (the agent's content stays on the host)"
    if trial.error is not None:
        return f"none: the agent raised {trial.error.type}"
    return "none"


@dataclass(frozen=True)
class ChangeRow:
    """One path of a diff, as text: `~ $.city  expected "Oslo"  got "Bergen"`."""

    sign: str
    path: str
    expected: str
    actual: str
    kind: str


def change_rows(changes: Iterable[PathChange], limit: int | None = None) -> list[ChangeRow]:
    return [
        ChangeRow(
            sign=SIGNS[change.kind],
            path=change.path,
            expected=ABSENT if change.kind == "added" else json_text(change.expected, limit),
            actual=ABSENT if change.kind == "removed" else json_text(change.actual, limit),
            kind=change.kind,
        )
        for change in changes
    ]


@dataclass(frozen=True)
class TraceRow:
    """One tool call of a trial, as text."""

    index: int
    tool: str
    served: str
    """`replayed`, `live` or `MISS`."""
    served_by: ServedAs
    status: str
    duration: str
    args: str
    result: str
    delegate: bool


def trace_rows(calls: Sequence[TraceCall], limit: int | None = None) -> list[TraceRow]:
    return [
        TraceRow(
            index=call.index,
            tool=call.tool,
            served=SERVED_LABELS[call.servedBy],
            served_by=call.servedBy,
            status=call.status,
            duration="" if call.durationMs is None else f"{call.durationMs} ms",
            args=json_text(call.inputs, limit) if call.inputs is not None else call.argsHash,
            result=_result_text(call, limit),
            delegate=call.delegate,
        )
        for call in calls
    ]


def _result_text(call: TraceCall, limit: int | None) -> str:
    if call.error is not None:
        code, message = call.error.get("code"), call.error.get("message")
        return cut(f"{code}: {message}" if message else str(code), limit)
    if call.outcome is not None:
        return json_text(call.outcome, limit)
    return "" if call.status == "ok" else call.status


def judge_headline(judge: JudgeView) -> str:
    """`judge support-judge (sha256:1a2b3c4d5e6f…), advisory` — or `gate` — and why it gave
    no judgement, when it gave none."""
    role = "gate" if judge.gate else "advisory"
    text = f"judge {judge.judgeId} ({judge.digest[:19]}…), {role}"
    return text if judge.unjudged is None else f"{text}: unjudged: {judge.unjudged}"


@dataclass(frozen=True)
class CriterionRow:
    """One rubric criterion as the judge graded it, and the exchange that graded it."""

    mark: str
    """`pass`, `FAIL` or `—` (unjudged)."""
    criterion: str
    weight: str
    score: str
    reason: str
    exchange: str
    """`#3 live, 812 tokens, $0.00041` — the trial's model call it links to."""
    exchange_index: int | None


def criterion_rows(trial: TrialDetail) -> list[CriterionRow]:
    """The trial's rubric criteria (none for a trial without a judge part)."""
    judge = trial.grade.judge if trial.grade is not None else None
    if judge is None:
        return []
    calls = {call.index: call for call in trial.modelCalls}
    return [
        CriterionRow(
            mark="—" if c.score is None else "pass" if c.passed else "FAIL",
            criterion=c.criterion,
            weight=f"{c.weight:g}",
            score="—" if c.score is None else f"{c.score:.2f}",
            reason=c.reason or "",
            exchange=_exchange_text(c.exchange, calls),
            exchange_index=c.exchange,
        )
        for c in judge.criteria
    ]


def _exchange_text(index: int | None, calls: Mapping[int, ModelCallView]) -> str:
    call = None if index is None else calls.get(index)
    if call is None:
        return "" if index is None else f"#{index}"
    facts: list[str] = [call.servedBy]
    tokens = (call.promptTokens or 0) + (call.completionTokens or 0)
    if tokens:
        facts.append(f"{tokens} tokens")
    if call.costUsd is not None:
        facts.append(f"${call.costUsd:.6g}")
    return f"#{index} " + ", ".join(facts)


def miss_headline(miss: MissView) -> str:
    """`call #1 to shop:order: closest recording toolResponses[0]` (or why there is none)."""
    head = f"call #{miss.callIndex} to {miss.tool}"
    if miss.closest is None:
        return f"{head}: no recording names {miss.tool}"
    used = (
        f" ({miss.consumedForTool} recording(s) of {miss.tool} already used by this trial)"
        if miss.consumedForTool
        else ""
    )
    return f"{head}: closest recording toolResponses[{miss.closest.entryIndex}]{used}"


# ── plain text (JUnit bodies) ────────────────────────────────────────

PLAIN_LIMIT = 1000
"""Characters of one value in a plain-text body before it is cut."""


def trial_lines(trial: TrialDetail, limit: int | None = PLAIN_LIMIT) -> list[str]:
    """One trial as plain text: reason, expected, actual, diff, trace and misses."""
    state = "passed" if trial.passed else "failed"
    lines = [f"trial {trial.trial}: {state} in {trial.durationMs} ms — {trial.reason}"]
    if trial.expected is not None:
        lines.append(f"  expected: {expected_text(trial.expected, limit)}")
    lines.append(f"  actual:   {actual_text(trial, limit)}")
    if trial.error is not None:
        raised = trial.error.type + (f": {trial.error.message}" if trial.error.message else "")
        lines.append(f"  raised:   {raised}")
    if trial.stderr and not trial.passed:
        lines.append("  stderr:")
        lines.extend(f"    {row}" for row in trial.stderr.splitlines())
    if trial.grade is not None and trial.grade.diff:
        lines.append("  diff (expected → actual):")
        lines.extend(_change_line(row) for row in change_rows(trial.grade.diff, limit))
    if trial.grade is not None and trial.grade.traceback:
        lines.append("  grader traceback:")
        lines.extend(f"    {row}" for row in trial.grade.traceback.splitlines())
    if trial.grade is not None and trial.grade.judge is not None:
        lines.append(f"  {judge_headline(trial.grade.judge)}")
        lines.extend(
            f"    {row.mark} {row.score} (weight {row.weight}) {row.criterion}"
            + (f" — {row.reason}" if row.reason else "")
            + (f" [exchange {row.exchange}]" if row.exchange else "")
            for row in criterion_rows(trial)
        )
    if trial.calls:
        lines.append("  trace:")
        for row in trace_rows(trial.calls, limit):
            delegate = " (delegate)" if row.delegate else ""
            result = f" → {row.result}" if row.result else ""
            lines.append(
                f"    #{row.index} {row.tool}{delegate} [{row.served}] {row.status}"
                f" {row.args}{result}"
            )
    for miss in trial.misses:
        lines.append(f"  miss: {miss_headline(miss)}")
        if miss.closest is not None and miss.closest.args is not None:
            lines.append(f"    recorded: {json_text(miss.closest.args, limit)}")
        if miss.diff:
            lines.append("    args diff (recorded → call):")
            lines.extend(f"  {_change_line(row)}" for row in change_rows(miss.diff, limit))
    if trial.contentErased:
        lines.append("  (the tool content of this trial was erased)")
    return lines


def _change_line(row: ChangeRow) -> str:
    return f"    {row.sign} {row.path}: {row.expected} → {row.actual}"


def detail_text(detail: TaskDetail, limit: int | None = PLAIN_LIMIT) -> str:
    """A task's failing trials (every trial if none failed) as plain text."""
    failing = [trial for trial in detail.trialDetails if not trial.passed]
    changed = tools_changed_text(detail)
    lines: list[str] = [] if changed is None else [changed]
    for trial in failing or detail.trialDetails:
        lines.extend(trial_lines(trial, limit))
    return "\n".join(lines)


def decisions_text(detail: TaskDetail, limit: int | None = PLAIN_LIMIT) -> str:
    """Each trial's decision, one line each (its hash for a `hash` agent)."""
    return "\n".join(
        f"trial {trial.trial} decision: {actual_text(trial, limit)}"
        for trial in detail.trialDetails
    )
