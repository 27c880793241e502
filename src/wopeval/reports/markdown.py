"""A pull request's summary of an eval run, in GitHub-flavoured Markdown (a pure renderer).

Sized for `$GITHUB_STEP_SUMMARY` and a PR comment (GitHub takes 65,536
characters): the verdict line first, then the baseline (its id, tags and age),
the task table with regressed and inconclusive tasks first, each failing or
regressed task's reason as the host gave it (an inconclusive one's with how many more
trials would decide it), the tasks whose MCP tools changed since
their recording, fixture misses and live calls. A
table longer than the budget keeps its first rows and says how many it left out.
"""

from __future__ import annotations

from datetime import datetime

from wopeval.reports._age import age_text, parse_instant
from wopeval.reports._why import (
    RunWhy,
    marks,
    more_trials_text,
    needs_explaining,
    paired,
    tools_changed_text,
)
from wopeval.reports.html import RunFacts
from wopeval.reports.junit import cost_text
from wopeval.wire.summary import EvalSummary, Regression, TaskRegression, TaskSummary, Verdict

BUDGET = 60_000
"""Characters at most: under GitHub's 65,536 for a comment, with room for a footer."""

_ORDER = {Verdict.REGRESSED: 0, Verdict.INCONCLUSIVE: 1, Verdict.IMPROVED: 3, Verdict.UNCHANGED: 4}
_MARK = {
    Verdict.REGRESSED: "🔴 regressed",
    Verdict.INCONCLUSIVE: "🟡 inconclusive",
    Verdict.IMPROVED: "🟢 improved",
    Verdict.UNCHANGED: "⚪ unchanged",
}


def markdown_report(
    summary: EvalSummary,
    facts: RunFacts,
    *,
    exit_code: int | None = None,
    why: RunWhy | None = None,
    now: datetime | None = None,
) -> str:
    """The whole summary; `now` dates the baseline's age (the function reads no clock)."""
    lines = [f"### {_headline(summary, exit_code)}", ""]
    lines += _facts(summary, facts, now)
    pairs = paired(summary)
    body = _table(summary, pairs)
    reasons = _reasons(summary, pairs, why) + _tools_changed(why)
    kept, left = _fit(lines, body, reasons)
    return "\n".join(kept + ([f"\n_{left} more rows left out to fit a comment._"] if left else []))


def _headline(summary: EvalSummary, exit_code: int | None) -> str:
    verdict = summary.regression.verdict if summary.regression else None
    suite = f"`{summary.suiteId}@{summary.suiteVersion}`"
    bar = "thresholds passed" if summary.passed else "thresholds FAILED"
    score = f"{summary.aggregateScore:.2f} ({summary.passedCount}/{summary.taskCount} tasks)"
    if verdict is not None:
        head = _MARK[verdict].upper()
    else:
        head = "✅ PASSED" if summary.passed else "❌ FAILED"
    code = f" · exit {exit_code}" if exit_code is not None else ""
    return f"{head} — {suite} · score {score} · {bar}{code}"


def _facts(summary: EvalSummary, facts: RunFacts, now: datetime | None) -> list[str]:
    rows = [f"- **Run:** `{facts.run_id}`"]
    if facts.agent_id:
        rows.append(f"- **Agent:** `{facts.agent_id}`" + _revision(facts))
    if summary.regression is not None:
        rows.append(f"- **Baseline:** {_baseline(summary.regression, facts, now)}")
    rows.append(f"- **Fixture misses:** {summary.fixtureMissCount}")
    rows.extend(f"- **Advisory:** {note}" for note in summary.advisory_notes())
    if facts.live_calls is not None:
        rows.append(f"- **Live tool calls:** {facts.live_calls}")
    if summary.totalCostUsd is not None:
        rows.append(f"- **Cost:** ${cost_text(summary.totalCostUsd)}")
    return [*rows, ""]


def _revision(facts: RunFacts) -> str:
    return f" at `{facts.revision}`" if facts.revision else ""


def _baseline(regression: Regression, facts: RunFacts, now: datetime | None) -> str:
    text = f"`{regression.baselineRunId}`"
    base = facts.baseline
    if base is not None and base.tags:
        text += " tagged " + ", ".join(f"`{tag}`" for tag in base.tags)
    if base is not None and base.completed_at and now is not None:
        text += f", {age_text(parse_instant(base.completed_at), now)} old"
    return text + f" · Δ aggregate {regression.scoreDelta:+.2f}"


def _table(summary: EvalSummary, pairs: dict[str, TaskRegression]) -> list[str]:
    judged = summary.regression is not None
    head = ["Task", "Baseline", "Score", "Δ", "Trials", "Misses", "Passed"]
    head += ["Verdict"] if judged else []
    rows = [_row(task, pairs.get(task.taskId), judged) for task in _ordered(summary, pairs)]
    for task_id in summary.regression.baselineOnlyTaskIds or [] if summary.regression else []:
        rows.append(f"| `{task_id}` | — | — | — | — | — | — | baseline only |")
    separator = "|" + "|".join(" --- " for _ in head) + "|"
    return ["| " + " | ".join(head) + " |", separator, *rows]


def _ordered(summary: EvalSummary, pairs: dict[str, TaskRegression]) -> list[TaskSummary]:
    """Regressed, then inconclusive, then failing, then the rest, each in suite order."""

    def rank(task: TaskSummary) -> int:
        pair = pairs.get(task.taskId)
        if pair is not None:
            return _ORDER.get(pair.verdict, 2)
        return 2 if not task.passed else 5

    return sorted(summary.tasks, key=rank)


def _row(task: TaskSummary, pair: TaskRegression | None, judged: bool) -> str:
    trials = f"{task.passedTrials}/{task.trials}" if task.trials is not None else "—"
    misses = str(task.fixtureMissCount) if task.fixtureMissCount is not None else "—"
    cells = [
        f"`{task.taskId}`",
        f"{pair.baselineScore:.2f}" if pair else "—",
        f"{task.score:.2f}",
        f"{pair.delta:+.2f}" if pair else "—",
        trials,
        misses,
        "✅" if task.passed else "❌",
    ]
    if judged:
        verdict = _MARK[pair.verdict] if pair else "candidate only"
        cells.append(" ".join([verdict, *marks(pair)]))
    return "| " + " | ".join(cells) + " |"


def _reasons(
    summary: EvalSummary, pairs: dict[str, TaskRegression], why: RunWhy | None
) -> list[str]:
    if why is None:
        return []
    listed = [
        line
        for line in why.listing.tasks
        if needs_explaining(line, pairs[line.taskId].verdict if line.taskId in pairs else None)
    ]
    if not listed:
        return []
    out = ["", "**Why**", ""]
    for line in listed:
        pair = pairs.get(line.taskId)
        tags = (
            [pair.verdict.value]
            if pair is not None and pair.verdict in (Verdict.REGRESSED, Verdict.INCONCLUSIVE)
            else []
        )
        note = " ".join(f"_{tag}_" for tag in [*tags, *marks(pair)])
        more = more_trials_text(line)
        tail = "" if more is None else f" — {_escape(more)}"
        out.append(f"- `{line.taskId}` {note}".rstrip() + f": {_escape(line.reason)}{tail}")
    return out


def _tools_changed(why: RunWhy | None) -> list[str]:
    """Each task whose MCP tools changed since its recording, with what changed."""
    if why is None:
        return []
    changed = [(line.taskId, tools_changed_text(line)) for line in why.listing.tasks]
    rows = [f"- `{task_id}`: {_escape(text)}" for task_id, text in changed if text is not None]
    return ["", "**Tools changed since the recording**", "", *rows] if rows else []


def _escape(text: str) -> str:
    """A reason on one Markdown line: no markup of its own, no line breaks."""
    text = " ".join(text.split())
    for char in "\\`*_[]<>|":
        text = text.replace(char, "\\" + char)
    return text


def _fit(head: list[str], table: list[str], reasons: list[str]) -> tuple[list[str], int]:
    """The document within `BUDGET`: whole if it fits, else the table's first rows."""
    whole = head + table + reasons
    if len("\n".join(whole)) <= BUDGET:
        return whole, 0
    kept = head + table[:2]
    used = len("\n".join(kept))
    for index, row in enumerate(table[2:]):
        if used + len(row) + 1 > BUDGET:
            return kept, len(table) - 2 - index
        kept.append(row)
        used += len(row) + 1
    return kept, 0
