"""The HTML report's per-task drill-down: one task's trials as an escaped HTML fragment.

Each trial shows its reason, the expected and actual values, the grade's diff,
the agent's exception, the tool trace with every call marked replayed / live /
MISS, and each miss with its closest recording and argument diff — the rows
`_why` lays out, so the report says what `wopeval explain` says. Everything
from the run goes through `html.escape`: agent content may hold markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from wopeval.reports._why import (
    ChangeRow,
    actual_text,
    change_rows,
    criterion_rows,
    expected_text,
    json_text,
    judge_headline,
    miss_headline,
    tools_changed_text,
    trace_rows,
)
from wopeval.wire.task_detail import JudgeView, MissView, TaskDetail, TraceCall, TrialDetail

VALUE_LIMIT = 4000
"""Characters of one value in the report before it is cut (the route has the whole)."""


def drilldown(detail: TaskDetail) -> str:
    """Every trial of the task, failing ones first, each in its own block."""
    trials = sorted(detail.trialDetails, key=lambda trial: (trial.passed, trial.trial))
    parts = []
    changed = tools_changed_text(detail)
    if changed is not None:
        parts.append(f'<p class="note">{escape(changed)}.</p>')
    parts.extend(_trial(trial) for trial in trials)
    return "".join(parts)


def _trial(trial: TrialDetail) -> str:
    state = "passed" if trial.passed else "failed"
    parts = [
        f'<div class="trial trial-{state}" data-trial="{trial.trial}">',
        f"<h4>Trial {trial.trial} — {state} in {trial.durationMs} ms</h4>",
        f'<p class="reason">{escape(trial.reason)}</p>',
        '<dl class="values">',
    ]
    if trial.expected is not None:
        expected = escape(expected_text(trial.expected, VALUE_LIMIT))
        parts.append(f'<dt>Expected</dt><dd class="expected"><code>{expected}</code></dd>')
    actual = escape(actual_text(trial, VALUE_LIMIT))
    parts.append(f'<dt>Actual</dt><dd class="actual"><code>{actual}</code></dd>')
    if trial.error is not None:
        raised = trial.error.type + (f": {trial.error.message}" if trial.error.message else "")
        parts.append(f'<dt>Raised</dt><dd class="raised"><code>{escape(raised)}</code></dd>')
    parts.append("</dl>")
    if trial.stderr and not trial.passed:
        parts.append(f'<pre class="stderr">{escape(trial.stderr)}</pre>')
    if trial.grade is not None and trial.grade.diff:
        parts.append("<h5>Diff (expected → actual)</h5>")
        parts.append(_diff(change_rows(trial.grade.diff, VALUE_LIMIT), "expected", "actual"))
    if trial.grade is not None and trial.grade.traceback:
        traceback = escape(trial.grade.traceback)
        parts.append(f'<h5>Grader traceback</h5><pre class="traceback">{traceback}</pre>')
    if trial.grade is not None and trial.grade.judge is not None:
        parts.append(_judge(trial, trial.grade.judge))
    parts.append(_trace(trial.calls))
    parts.extend(_miss(miss) for miss in trial.misses)
    if trial.contentErased:
        parts.append('<p class="note">The tool content of this trial was erased.</p>')
    parts.append("</div>")
    return "".join(parts)


def _trace(calls: Sequence[TraceCall]) -> str:
    if not calls:
        return '<p class="note">No tool calls.</p>'
    names = ("#", "Tool", "Served", "Status", "Time", "Args", "Result")
    head = "".join(f"<th>{name}</th>" for name in names)
    rows = []
    for row in trace_rows(calls, VALUE_LIMIT):
        tool = row.tool + (" (delegate)" if row.delegate else "")
        rows.append(
            f'<tr class="call served-{row.served_by}">'
            f"<td>{row.index}</td><td>{escape(tool)}</td>"
            f'<td class="served">{row.served}</td><td>{escape(row.status)}</td>'
            f"<td>{escape(row.duration)}</td>"
            f"<td><code>{escape(row.args)}</code></td><td><code>{escape(row.result)}</code></td></tr>"
        )
    return (
        '<h5>Tool trace</h5><table class="trace">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _judge(trial: TrialDetail, judge: JudgeView) -> str:
    """The rubric judge and each criterion's grade, with the exchange that graded it."""
    names = ("", "Criterion", "Weight", "Score", "The judge's words", "Exchange")
    head = "".join(f"<th>{name}</th>" for name in names)
    rows = "".join(
        f'<tr class="criterion"><td>{escape(row.mark)}</td><td>{escape(row.criterion)}</td>'
        f"<td>{row.weight}</td><td>{row.score}</td><td>{escape(row.reason)}</td>"
        f'<td class="exchange">{escape(row.exchange)}</td></tr>'
        for row in criterion_rows(trial)
    )
    headline = escape(judge_headline(judge))
    return (
        f'<h5>Rubric</h5><p class="judge">{headline}</p><table class="rubric">'
        f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
    )


def _miss(miss: MissView) -> str:
    parts = [f'<div class="miss"><p><strong>MISS</strong> {escape(miss_headline(miss))}</p>']
    if miss.closest is not None and miss.closest.args is not None:
        recorded = escape(json_text(miss.closest.args, VALUE_LIMIT))
        parts.append(f"<p>Recorded args: <code>{recorded}</code></p>")
    if miss.diff:
        parts.append(_diff(change_rows(miss.diff, VALUE_LIMIT), "recorded", "call"))
    parts.append("</div>")
    return "".join(parts)


def _diff(rows: Sequence[ChangeRow], left: str, right: str) -> str:
    body = "".join(
        f'<tr class="change change-{row.kind}"><td class="sign">{row.sign}</td>'
        f"<td><code>{escape(row.path)}</code></td><td><code>{escape(row.expected)}</code></td>"
        f"<td><code>{escape(row.actual)}</code></td></tr>"
        for row in rows
    )
    return (
        '<table class="diff"><thead><tr><th></th><th>Path</th>'
        f"<th>{escape(left)}</th><th>{escape(right)}</th></tr></thead>"
        f"<tbody>{body}</tbody></table>"
    )
