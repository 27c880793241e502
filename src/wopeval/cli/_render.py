"""Rendering: wire values in, Rich renderables out. Nothing here prints (G13, `httpx._main`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from pydantic import JsonValue
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from wopeval import client, reports
from wopeval.cli._exit import ExitCode
from wopeval.wire.json_text import JsonObject
from wopeval.wire.verdict import Verdict

if TYPE_CHECKING:
    # Named in annotations only: a listing reads no summary nor event models (issue 28).
    from wopeval.wire.events import EventDoc
    from wopeval.wire.summary import EvalSummary, TaskRegression, TaskSummary

VERDICT_STYLES = {
    Verdict.REGRESSED: "bold red",
    Verdict.IMPROVED: "bold green",
    Verdict.UNCHANGED: "dim",
    Verdict.INCONCLUSIVE: "yellow",
}

EXIT_MEANINGS = {
    ExitCode.OK: "passed, no regression",
    ExitCode.THRESHOLD_FAILED: "the suite's thresholds failed",
    ExitCode.REGRESSED: "regression against the baseline",
    ExitCode.INCONCLUSIVE: "only inconclusive differences (--strict)",
    ExitCode.ERROR: "usage, connection or host error",
}


def score(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def delta(value: float | None) -> str:
    return "—" if value is None else f"{value:+.2f}"


def verdict_text(verdict: Verdict | str | None) -> Text:
    if verdict is None:
        return Text("—", style="dim")
    name = Verdict(verdict) if isinstance(verdict, str) else verdict
    return Text(name.value, style=VERDICT_STYLES[name])


def task_table(summary: EvalSummary, *, title: str | None = None) -> Table:
    """Per task: baseline and candidate scores, delta, trials, misses and verdict.

    Without a baseline the table has the run's own columns only; the p-value and
    flaky columns appear when the pairing has multi-trial tasks, and a run whose
    model calls were priced adds each task's mean latency and cost.
    """
    table = Table(title=title, title_justify="left", header_style="bold")
    table.add_column("Task", no_wrap=True)
    paired: dict[str, TaskRegression] = {}
    if summary.regression is not None:
        paired = {t.taskId: t for t in summary.regression.tasks or []}
        table.add_column("Baseline", justify="right")
        table.add_column("Candidate", justify="right")
        table.add_column("Δ", justify="right")
    else:
        table.add_column("Score", justify="right")
    table.add_column("Trials", justify="right")
    table.add_column("Misses", justify="right")
    table.add_column("Passed", justify="center")
    multi_trial = False
    if summary.regression is not None:
        table.add_column("Verdict", no_wrap=True)
        multi_trial = any(p.pValue is not None or p.flaky is not None for p in paired.values())
        if multi_trial:
            table.add_column("p", justify="right")
            table.add_column("Flaky", justify="center")
    spend = summary.totalCostUsd is not None
    if spend:
        table.add_column("Latency", justify="right")
        table.add_column("Cost", justify="right")
    for task in summary.tasks:
        extra = _spend_cells(task) if spend else []
        trials = f"{task.passedTrials}/{task.trials}" if task.trials is not None else "—"
        misses = str(task.fixtureMissCount) if task.fixtureMissCount is not None else "—"
        passed = Text("yes", style="green") if task.passed else Text("no", style="red")
        if summary.regression is None:
            table.add_row(task.taskId, score(task.score), trials, misses, passed, *extra)
            continue
        pair = paired.get(task.taskId)
        cells: list[RenderableType] = [
            task.taskId,
            score(pair.baselineScore if pair else None),
            score(task.score),
            delta(pair.delta if pair else None),
            trials,
            misses,
            passed,
            verdict_text(pair.verdict) if pair else Text("candidate only", style="dim"),
        ]
        if multi_trial:
            cells += [p_value(pair.pValue if pair else None), flaky_text(pair)]
        table.add_row(*cells, *extra)
    if summary.regression is not None:
        for task_id in summary.regression.baselineOnlyTaskIds or []:
            blanks = ["—"] * (8 if multi_trial else 6)
            spent = ["—"] * (2 if spend else 0)
            baseline_only = Text("baseline only", style="dim")
            table.add_row(task_id, *blanks[:6], baseline_only, *blanks[6:], *spent)
    return table


def p_value(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def flaky_text(pair: TaskRegression | None) -> Text:
    if pair is None or pair.flaky is None:
        return Text("—", style="dim")
    return Text("flaky", style="yellow") if pair.flaky else Text("no", style="dim")


def _spend_cells(task: TaskSummary) -> list[RenderableType]:
    latency = f"{task.latencyMs} ms" if task.latencyMs is not None else "—"
    return [latency, f"${reports.cost_text(task.costUsd)}" if task.costUsd is not None else "—"]


def verdict_counts(summary: EvalSummary) -> str:
    """`1 regressed · 4 unchanged`, in a fixed order."""
    if summary.regression is None:
        return ""
    tasks = summary.regression.tasks or []
    counts = [(v, sum(1 for t in tasks if t.verdict is v)) for v in Verdict]
    return " · ".join(f"{n} {v.value}" for v, n in counts if n)


def result_lines(
    summary: EvalSummary,
    *,
    run_id: str | None = None,
    live_calls: int | None = None,
    exit_code: ExitCode | None = None,
    revision: str | None = None,
) -> Group:
    """The run's headline facts under the table."""
    rows: list[RenderableType] = []
    suite = f"{summary.suiteId}@{summary.suiteVersion}"
    rows.append(_line("Suite", suite + (f"   run {run_id}" if run_id else "")))
    if revision:
        rows.append(_line("Revision", revision))
    verdict_bar = "passed" if summary.passed else "FAILED"
    rows.append(
        _line(
            "Score",
            f"{summary.aggregateScore:.2f} ({summary.passedCount}/{summary.taskCount} tasks "
            f"passed) — thresholds {verdict_bar}",
        )
    )
    if summary.regression is not None:
        regression = summary.regression
        rows.append(
            _line(
                "Baseline",
                f"{regression.baselineRunId}   Δ aggregate {regression.scoreDelta:+.2f}",
            )
        )
        headline = verdict_text(regression.verdict)
        headline.plain = headline.plain.upper()
        counts = verdict_counts(summary)
        rows.append(
            Text.assemble(
                ("Paired verdict".ljust(17), "bold"),
                headline,
                f"  ({counts})" if counts else "",
            )
        )
    rows.append(_line("Fixture misses", str(summary.fixtureMissCount)))
    rows.extend(_line("Advisory", note) for note in summary.advisory_notes())
    if summary.totalCostUsd is not None:
        cost = reports.cost_text(summary.totalCostUsd)
        rows.append(_line("Cost", f"${cost} (model calls, all tasks)"))
    latencies = [t.latencyMs for t in summary.tasks if t.latencyMs is not None]
    if latencies:
        rows.append(_line("Latency", f"slowest task {max(latencies)} ms (mean of its trials)"))
    if live_calls is not None:
        rows.append(_line("Live tool calls", str(live_calls)))
    if exit_code is not None:
        rows.append(_line("Exit", f"{int(exit_code)} ({EXIT_MEANINGS[exit_code]})"))
    return Group(*rows)


def _line(label: str, value: str) -> Text:
    return Text.assemble((label.ljust(17), "bold"), value)


# ── listings ─────────────────────────────────────────────────────────


def runs_table(runs: Sequence[client.RunSnapshot], next_cursor: str | None = None) -> Table:
    """A listing: each run's status, tags, agents, start and duration, and for an eval run
    its suite version, score and verdict (the snapshot's `wopeval.run` extension)."""
    caption = f"more: --cursor {next_cursor}" if next_cursor else None
    table = Table(header_style="bold", caption=caption, caption_justify="left")
    table.add_column("Run", no_wrap=True)
    table.add_column("Workflow / suite", overflow="fold", min_width=12)
    table.add_column("Status", no_wrap=True)
    table.add_column("Tags", overflow="fold", min_width=6)
    table.add_column("Agents", overflow="fold", min_width=10)
    table.add_column("Started", no_wrap=True)
    table.add_column("Took", no_wrap=True, justify="right")
    table.add_column("Score", justify="right")
    table.add_column("Verdict", no_wrap=True)
    for run in runs:
        facts = run_facts(run)
        judged = facts.get("eval")
        if not isinstance(judged, dict):
            judged = {}
        workflow = run.workflowId
        if judged.get("suiteVersion"):
            workflow += f"@{judged['suiteVersion']}"
        verdict = judged.get("verdict")
        table.add_row(
            run.runId,
            workflow,
            _status(run.status),
            ", ".join(run.tags or []),
            ", ".join(_strings(facts.get("agentIds"))),
            short_time(run.startedAt),
            _took(facts.get("durationMs")),
            score(
                aggregate
                if isinstance(aggregate := judged.get("aggregateScore"), float | int)
                else None
            ),
            verdict_text(Verdict(verdict)) if isinstance(verdict, str) else Text(""),
        )
    return table


def run_facts(run: client.RunSnapshot) -> JsonObject:
    """The snapshot's `wopeval.run` extension ({} from a host that does not send it)."""
    return run.extension("wopeval.run")


def _strings(value: JsonValue) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []


def _took(milliseconds: object) -> str:
    if not isinstance(milliseconds, int):
        return ""
    return f"{milliseconds} ms" if milliseconds < 10_000 else f"{milliseconds / 1000:.1f} s"


def short_time(value: object) -> str:
    """`2026-11-29T21:52:49.084Z` → `2026-11-29 21:52:49` (listings only; --json keeps it all)."""
    if not isinstance(value, str):
        return ""
    return value.replace("T", " ")[:19]


def run_details(snapshot: client.RunSnapshot, summary: EvalSummary | None) -> Group:
    facts = run_facts(snapshot)
    rows: list[RenderableType] = [
        _line("Run", snapshot.runId),
        _line("Workflow / suite", snapshot.workflowId),
        Text.assemble(("Status".ljust(17), "bold"), _status(snapshot.status)),
        _line("Started", snapshot.startedAt or ""),
        _line("Completed", snapshot.completedAt or ""),
    ]
    if snapshot.tags:
        rows.append(_line("Tags", ", ".join(snapshot.tags)))
    agents = _strings(facts.get("agentIds"))
    if agents:
        rows.append(_line("Agents", ", ".join(agents)))
    if snapshot.error is not None:
        rows.append(_line("Error", snapshot.error_line()))
    if "inputs" in snapshot.model_fields_set:
        rows.append(_line("Inputs", _json_line(snapshot.inputs)))
    if "outputs" in facts:
        rows.append(_line("Outputs", _json_line(facts["outputs"])))
    if summary is not None:
        rows.append(task_table(summary))
        rows.append(result_lines(summary))
    return Group(*rows)


def _json_line(value: JsonValue) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def events_table(events: Iterable[EventDoc], *, width: int = 70) -> Table:
    table = Table(header_style="bold")
    table.add_column("Seq", justify="right")
    table.add_column("Type", no_wrap=True)
    table.add_column("Node", no_wrap=True)
    table.add_column("Payload", overflow="ellipsis", no_wrap=True, max_width=width)
    for event in events:
        payload = json.dumps(event.payload, separators=(",", ":"), ensure_ascii=False)
        table.add_row(
            str(event.sequence),
            event.type,
            event.nodeId or "",
            Text(payload),
        )
    return table


def suites_table(suites: Sequence[client.SuiteLine]) -> Table:
    table = Table(header_style="bold")
    for name in ("Suite", "Version", "Scope", "Tasks", "Fixture id"):
        table.add_column(name, no_wrap=True)
    for suite in suites:
        table.add_row(
            suite.suiteId,
            suite.version,
            suite.scope or "",
            "" if suite.taskCount is None else str(suite.taskCount),
            suite.fixtureId or "",
        )
    return table


def _status(status: str) -> Text:
    style = {"completed": "green", "failed": "red", "cancelled": "yellow"}.get(status, "cyan")
    return Text(status, style=style)
