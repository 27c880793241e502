"""Why tasks failed, for the terminal: the rows of `reports` as Rich renderables (no printing).

Agent content goes into `Text` objects, never into markup strings, so a
decision holding `[bold]` or a traceback holding brackets prints as written.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from wopeval import reports
from wopeval.wire.summary import EvalSummary
from wopeval.wire.task_detail import JudgeView, MissView, TaskDetail, TaskLine, TrialDetail

VALUE_LIMIT = 300
"""Characters of one value on the terminal before it is cut (`--json` has them whole)."""

SERVED_STYLES = {"fixture": "green", "live": "yellow", "miss": "bold red"}
SIGN_STYLES = {"added": "green", "removed": "red", "changed": "yellow"}
CRITERION_STYLES = {"pass": "green", "FAIL": "bold red", "—": "yellow"}
LABEL_WIDTH = 10


def reason_lines(summary: EvalSummary, why: reports.RunWhy, run_id: str) -> Group | None:
    """Under the table: each failing or regressed task's reason line, with its marks."""
    pairs = reports.paired(summary)
    wanted = set(reports.explained_task_ids(summary, why.listing))
    lines = [line for line in why.listing.tasks if line.taskId in wanted]
    if not lines:
        return None
    width = max(len(line.taskId) for line in lines)
    rows: list[RenderableType] = [Text("Why", style="bold")]
    for line in lines:
        pair = pairs.get(line.taskId)
        notes = ([pair.verdict.value] if pair else []) + reports.marks(pair)
        row = Text("  ")
        row.append(line.taskId.ljust(width), style="bold")
        row.append("  ")
        if notes:
            row.append(" · ".join(notes), style="yellow")
            row.append(" — ")
        row.append(line.reason)
        more = reports.more_trials_text(line)
        if more is not None:
            row.append(f" · {more}", style="yellow")
        rows.append(row)
    rows.append(
        Text(f"  wopeval explain {run_id} shows the diffs and the tool traces.", style="dim")
    )
    return Group(*rows)


def nothing_to_explain(run_id: str) -> Text:
    return Text(f"Every task of {run_id} passed all its trials: nothing to explain.")


def explanation(detail: TaskDetail, *, every_trial: bool) -> Group:
    """One task: its headline and reason, then its failing trials (or all) in full."""
    rows: list[RenderableType] = [_headline(detail), _field("reason", Text(detail.reason))]
    more = reports.more_trials_text(detail)
    if more is not None:
        rows.append(_field("verdict", Text(f"inconclusive: {more}", style="yellow")))
    changed = reports.tools_changed_text(detail)
    if changed is not None:
        rows.append(_field("tools", Text(changed, style="yellow")))
    shown = [trial for trial in detail.trialDetails if every_trial or not trial.passed]
    for trial in shown:
        rows.append(_trial(trial, detail.reason))
    passed = [trial.trial for trial in detail.trialDetails if trial not in shown]
    if passed:
        rows.append(Text(f"  trials {', '.join(map(str, passed))} passed", style="dim"))
    rows.append(Text(""))
    return Group(*rows)


def _headline(line: TaskLine) -> Text:
    text = Text()
    text.append(line.taskId, style="bold")
    text.append("  ")
    text.append("passed" if line.passed else "FAILED", style="green" if line.passed else "bold red")
    facts = [f"score {line.score:.2f}", f"{line.passedTrials}/{line.trials} trials"]
    if line.fixtureMissCount:
        facts.append(f"{line.fixtureMissCount} fixture miss(es)")
    if line.verdict:
        facts.append(f"verdict {line.verdict}")
    if line.pValue is not None:
        facts.append(f"p={line.pValue:.3g}")
    if line.flaky:
        facts.append("flaky")
    text.append("  " + " · ".join(facts), style="dim")
    return text


def _trial(trial: TrialDetail, task_reason: str) -> Group:
    state = "passed" if trial.passed else "failed"
    rows: list[RenderableType] = [
        Text.assemble(
            ("  trial ", "bold"),
            (str(trial.trial), "bold"),
            f" {state} in {trial.durationMs} ms",
            style="" if not trial.passed else "dim",
        )
    ]
    if not trial.passed and trial.reason != task_reason:
        rows.append(_field("reason", Text(trial.reason)))
    if trial.expected is not None:
        rows.append(_field("expected", Text(reports.expected_text(trial.expected, VALUE_LIMIT))))
    rows.append(_field("actual", Text(reports.actual_text(trial, VALUE_LIMIT))))
    if trial.error is not None:
        raised = trial.error.type + (f": {trial.error.message}" if trial.error.message else "")
        rows.append(_field("raised", Text(raised, style="red")))
    if trial.stderr and not trial.passed:
        rows.append(_field("stderr", Text(trial.stderr, style="dim")))
    if trial.grade is not None and trial.grade.diff:
        rows.append(_field("diff", _diff(reports.change_rows(trial.grade.diff, VALUE_LIMIT))))
    if trial.grade is not None and trial.grade.traceback:
        rows.append(_field("grader", Text(trial.grade.traceback, style="dim")))
    if trial.grade is not None and trial.grade.judge is not None:
        rows.append(_field("judge", _judge(trial.grade.judge, reports.criterion_rows(trial))))
    if trial.calls:
        rows.append(_field("trace", _trace(reports.trace_rows(trial.calls, VALUE_LIMIT))))
    else:
        rows.append(_field("trace", Text("no tool calls", style="dim")))
    rows.extend(_miss(miss) for miss in trial.misses)
    if trial.contentErased:
        rows.append(_field("", Text("the tool content of this trial was erased", style="dim")))
    return Group(*rows)


def _judge(judge: JudgeView, rows: Sequence[reports.CriterionRow]) -> Group:
    """The judge, then each criterion: its mark, score, weight, the judge's words and the
    exchange (`modelCalls[#]` of the trial) that graded it."""
    lines: list[RenderableType] = [Text(reports.judge_headline(judge))]
    for row in rows:
        line = Text.assemble(
            (f"{row.mark:<4} ", CRITERION_STYLES[row.mark]),
            f"{row.score} ",
            (f"(weight {row.weight}) ", "dim"),
            row.criterion,
        )
        if row.reason:
            line.append(f" — {row.reason}", style="italic")
        if row.exchange:
            line.append(f"  exchange {row.exchange}", style="dim")
        lines.append(line)
    return Group(*lines)


def _miss(miss: MissView) -> RenderableType:
    parts: list[RenderableType] = [Text(reports.miss_headline(miss))]
    if miss.closest is not None and miss.closest.args is not None:
        recorded = reports.json_text(miss.closest.args, VALUE_LIMIT)
        parts.append(Text.assemble(("recorded ", "dim"), recorded))
    if miss.diff:
        parts.append(_diff(reports.change_rows(miss.diff, VALUE_LIMIT), "recorded", "call"))
    return _field("MISS", Group(*parts), style="bold red")


def _diff(rows: Sequence[reports.ChangeRow], left: str = "expected", right: str = "got") -> Table:
    table = Table.grid(padding=(0, 1))
    for _ in range(5):
        table.add_column()
    for row in rows:
        table.add_row(
            Text(row.sign, style=SIGN_STYLES[row.kind]),
            Text(row.path, style="bold"),
            Text.assemble((f"{left} ", "dim"), row.expected),
            Text("→", style="dim"),
            Text.assemble((f"{right} ", "dim"), row.actual),
        )
    return table


def _trace(rows: Sequence[reports.TraceRow]) -> Group:
    """Each call on a line of its own (served-by marked), its args and result below it."""
    lines: list[RenderableType] = []
    for row in rows:
        head = Text.assemble((f"#{row.index} ", "dim"), row.tool)
        if row.delegate:
            head.append(" (delegate)", style="dim")
        head.append("  ")
        head.append(row.served, style=SERVED_STYLES[row.served_by])
        head.append("  ")
        head.append(row.status, style="" if row.status == "ok" else "red")
        if row.duration:
            head.append(f"  {row.duration}", style="dim")
        lines.append(head)
        lines.append(Text.assemble(("   args   ", "dim"), row.args))
        if row.result:
            lines.append(Text.assemble(("   result ", "dim"), row.result))
    return Group(*lines)


def _field(label: str, value: RenderableType, *, style: str = "dim") -> Table:
    table = Table.grid(padding=(0, 1))
    table.add_column(width=LABEL_WIDTH + 4, no_wrap=True)
    table.add_column()
    table.add_row(Text(f"    {label}", style=style), value)
    return table
