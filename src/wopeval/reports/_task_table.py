"""The HTML report's task table: one row per task, its reason, and a drill-down below it.

Each task is a `<tbody>` of its own — the row, then (when the host's details
were read) a row holding its `<details>` drill-down — so sorting moves a task
and its drill-down together. The p-value and flaky columns appear when the
pairing has multi-trial figures; the reason column when the host's task routes
answered; each task's mean latency and (for priced model calls) cost always.
`data-sort` holds a cell's sort key (blank for "—", sorted last).
"""

from __future__ import annotations

from html import escape

from wopeval.reports._drilldown import drilldown
from wopeval.reports._why import RunWhy, more_trials_text, paired
from wopeval.reports.junit import cost_text
from wopeval.wire.summary import EvalSummary, TaskRegression, TaskSummary

CONTROLS = (
    '<div class="controls" id="task-controls" hidden>'
    '<input type="search" id="task-filter" placeholder="Filter by task or reason" '
    'aria-label="Filter tasks">'
    '<select id="task-show" aria-label="Show">'
    '<option value="all">All tasks</option><option value="failing">Failing</option>'
    '<option value="regressed">Regressed</option><option value="flaky">Flaky</option>'
    '</select><span class="count" id="task-count"></span></div>'
)
"""Shown by the report's script only: without it they could do nothing."""


def tasks_section(summary: EvalSummary, why: RunWhy | None) -> str:
    pairs = paired(summary)
    multi_trial = any(pair.pValue is not None or pair.flaky is not None for pair in pairs.values())
    head = ["Task", "Baseline", "Candidate", "Δ", "Trials", "Misses", "Passed", "Verdict"]
    if multi_trial:
        head += ["p", "Flaky"]
    head += ["Latency", "Cost"]
    if why is not None:
        head.append("Reason")
    groups = [
        _task(summary, task, pairs.get(task.taskId), why, multi_trial, len(head))
        for task in summary.tasks
    ]
    ths = "".join(
        f'<th class="reason">{escape(h)}</th>' if h == "Reason" else f"<th>{escape(h)}</th>"
        for h in head
    )
    return (
        f'<section id="tasks"><h2>Tasks</h2>{CONTROLS}'
        f'<table id="task-table"><thead><tr>{ths}</tr></thead>'
        f"{''.join(groups)}</table></section>"
    )


def _task(
    summary: EvalSummary,
    task: TaskSummary,
    pair: TaskRegression | None,
    why: RunWhy | None,
    multi_trial: bool,
    width: int,
) -> str:
    verdict = pair.verdict.value if pair else ("new" if summary.regression else "—")
    cells: list[tuple[str, str]] = [
        (task.taskId, task.taskId),
        _number(pair.baselineScore if pair else None, "{:.2f}"),
        _number(task.score, "{:.2f}"),
        _number(pair.delta if pair else None, "{:+.2f}"),
        (trials_text(task), str(_rate(task))),
        _number(task.fixtureMissCount, "{}"),
        ("yes" if task.passed else "no", "1" if task.passed else "0"),
        (verdict, verdict),
    ]
    if multi_trial:
        cells.append(_number(pair.pValue if pair else None, "{:.3g}"))
        flaky = "" if pair is None or pair.flaky is None else ("yes" if pair.flaky else "no")
        cells.append((flaky or "—", flaky))
    cells.append(_number(task.latencyMs, "{} ms"))
    cost = task.costUsd
    cells.append(("—", "") if cost is None else (f"${cost_text(cost)}", repr(cost)))
    tds = "".join(f'<td data-sort="{escape(key)}">{escape(shown)}</td>' for shown, key in cells)
    line = why.line(task.taskId) if why is not None else None
    if why is not None:
        reason = line.reason if line is not None else "—"
        more = more_trials_text(line)
        reason += "" if more is None else f" · {more}"
        tds += f'<td class="reason" data-sort="{escape(reason)}">{escape(reason)}</td>'
    detail = why.details.get(task.taskId) if why is not None else None
    drill = ""
    if detail is not None:
        drill = (
            f'<tr class="drill"><td colspan="{width}">'
            f'<details id="why-{escape(task.taskId)}">'
            "<summary>Trials: expected, actual, diff and tool trace</summary>"
            f"{drilldown(detail)}</details></td></tr>"
        )
    search = " ".join([task.taskId, line.reason if line is not None else ""]).lower()
    attributes = (
        f'data-task-id="{escape(task.taskId)}" data-passed="{str(task.passed).lower()}" '
        f'data-verdict="{escape(verdict)}" '
        f'data-flaky="{str(bool(pair and pair.flaky)).lower()}" data-search="{escape(search)}"'
    )
    return (
        f'<tbody class="task" {attributes}>'
        f'<tr data-task-id="{escape(task.taskId)}" class="tone-{escape(verdict)}">{tds}</tr>'
        f"{drill}</tbody>"
    )


def _number(value: float | int | None, shape: str) -> tuple[str, str]:
    """`(shown, sort key)`: `—` and a blank key when there is no value."""
    return ("—", "") if value is None else (shape.format(value), repr(value))


def _rate(task: TaskSummary) -> float:
    return (task.passedTrials or 0) / task.trials if task.trials else 0.0


def trials_text(task: TaskSummary) -> str:
    return f"{task.passedTrials}/{task.trials}" if task.trials is not None else "—"
