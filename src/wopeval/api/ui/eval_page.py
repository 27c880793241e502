"""The eval run page and each task's drill-down (docs/dashboard.md "Eval runs").

The figures are the run record's summary, the task table and the drill-down
are `engine/eval_runs/task_details.py` (`task_list`, `task_detail`), whose content is
already what `engine/recording/content.py` lets leave the host.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Response

from wopeval.api.deps import HostDep
from wopeval.api.ui._render import Chrome, eval_path, render
from wopeval.api.ui._reviews import Review, task_reviews
from wopeval.api.ui._route import UiRoute, load_run
from wopeval.api.ui.deps import SessionDep
from wopeval.api.ui.live import stream_url
from wopeval.api.ui.run_page import RunFacts, run_facts
from wopeval.engine.eval_runs.task_details import task_detail, task_list
from wopeval.store import OwnedRun, RunRecord, StoredPlan
from wopeval.wire import errors
from wopeval.wire.runs import RunKind
from wopeval.wire.task_detail import TaskDetail, TaskLine

router = APIRouter(prefix="/ui", route_class=UiRoute, include_in_schema=False)

SHOWS = ("all", "failed", "regressed", "inconclusive", "flaky")
_KEEPS: dict[str, Callable[[TaskLine], bool]] = {
    "all": lambda _: True,
    "failed": lambda task: not task.passed,
    "regressed": lambda task: task.verdict == "regressed",
    "inconclusive": lambda task: task.verdict == "inconclusive",
    "flaky": lambda task: bool(task.flaky),
}
_SORT_KEYS: dict[str, Callable[[TaskLine], Any]] = {
    "task": lambda task: task.taskId,
    "result": lambda task: (task.passed, task.taskId),
    "score": lambda task: (task.score, task.taskId),
    "trials": lambda task: (task.passedTrials / max(task.trials, 1), task.taskId),
    "misses": lambda task: (task.fixtureMissCount, task.taskId),
    "latency": lambda task: (task.latencyMs or 0, task.taskId),
    "verdict": lambda task: (task.verdict or "", task.taskId),
    "p": lambda task: (1.0 if task.pValue is None else task.pValue, task.taskId),
}


@dataclass(frozen=True)
class Card:
    label: str
    value: str
    tone: str = "plain"
    """A CSS tone: plain, pass, fail, or a verdict."""


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    href: str
    """The table sorted by this column (the other way round when it already is)."""
    sort: str
    """`aria-sort` of the header: ascending, descending or none."""


@dataclass(frozen=True)
class EvalFacts:
    """What an eval run's plan and summary say about it beside its tasks."""

    suite: str
    agent_id: str | None
    modes: tuple[str, ...]
    baseline_run_id: str | None
    fixture_runs: dict[str, str]
    task_count: int
    verdict: str | None


@dataclass(frozen=True)
class EvalView:
    run: RunFacts
    facts: EvalFacts
    cards: list[Card]
    show: str
    shows: tuple[str, ...]
    show_hrefs: dict[str, str]
    columns: list[Column]
    tasks: list[TaskLine]
    scored: int
    stream: str | None
    reviews: dict[str, Review]
    """Each task's latest pass/fail label (`labels.py`)."""
    back: str
    """This page, where a label's form comes back to."""


@dataclass(frozen=True)
class TaskView:
    run: RunFacts
    facts: EvalFacts
    task: TaskDetail
    source_run_id: str | None
    """The recorded run this task's fixtures were derived from."""
    opened: int
    """The trial shown open first: the first failing one, else the first."""


async def load_eval(host: HostDep, session: SessionDep, segment: str) -> OwnedRun:
    record = await load_run(host, session, segment)
    if record.kind is not RunKind.EVAL:
        raise errors.NotFound("This run is not an eval run.")
    return record


@router.get("/evals/{runId}")
async def eval_page(
    runId: str, session: SessionDep, host: HostDep, show: str = "all", sort: str = "", dir: str = ""
) -> Response:
    if show not in SHOWS:
        raise errors.ValidationFailed(f"show must be one of {', '.join(SHOWS)}.")
    if sort and sort not in _SORT_KEYS:
        raise errors.ValidationFailed(f"sort must be one of {', '.join(_SORT_KEYS)}.")
    if dir not in ("", "asc", "desc"):
        raise errors.ValidationFailed("dir must be asc or desc.")
    record = await load_eval(host, session, runId)
    async with host.store.reading() as uow:
        plan = await uow.runs.plan(record.handle)
        listed = await task_list(uow, record, alpha=host.settings.eval.alpha)
        live_calls = await uow.tool_calls.count_live(record.handle)
    facts = eval_facts(record, plan)
    tasks = [task for task in listed.tasks if _KEEPS[show](task)]
    if sort:
        tasks.sort(key=_SORT_KEYS[sort], reverse=dir == "desc")
    base = eval_path(record.run_id)
    view = EvalView(
        run=run_facts(record),
        facts=facts,
        cards=_cards(record, listed.tasks, facts, live_calls),
        show=show,
        shows=SHOWS,
        show_hrefs={name: _href(base, name, sort, dir) for name in SHOWS},
        columns=_columns(base, show, sort, dir),
        tasks=tasks,
        scored=sum(task.scored for task in listed.tasks),
        stream=stream_url([record]) if not record.status.is_terminal else None,
        reviews=await task_reviews(host, session, record),
        back=_href(base, show, sort, dir),
    )
    return render("eval.html", Chrome(session, "runs", f"Eval run {record.run_id}"), view)


@router.get("/evals/{runId}/tasks/{taskId}")
async def task_page(runId: str, taskId: str, session: SessionDep, host: HostDep) -> Response:
    record = await load_eval(host, session, runId)
    async with host.store.reading() as uow:
        plan = await uow.runs.plan(record.handle)
        detail = await task_detail(uow, record, taskId, alpha=host.settings.eval.alpha)
    facts = eval_facts(record, plan)
    failing = [trial.trial for trial in detail.trialDetails if not trial.passed]
    view = TaskView(
        run=run_facts(record),
        facts=facts,
        task=detail,
        source_run_id=facts.fixture_runs.get(detail.taskId),
        opened=failing[0] if failing else 0,
    )
    title = f"Task {detail.taskId} of {record.run_id}"
    return render("task.html", Chrome(session, "runs", title), view)


def eval_facts(record: RunRecord, plan: StoredPlan | None) -> EvalFacts:
    suite = {} if plan is None else plan.suite
    tasks = suite.get("tasks")
    regression = None if record.summary is None else record.summary.regression
    verdict = None if regression is None else regression.verdict
    return EvalFacts(
        suite=f"{suite.get('suiteId', record.suite_id)}@{suite.get('version', '?')}",
        agent_id=None if plan is None else plan.agentId,
        modes=() if plan is None else tuple(plan.modes),
        baseline_run_id=None if plan is None else plan.baselineRunId,
        fixture_runs=dict(plan.fixtureRuns or {}) if plan is not None else {},
        task_count=len(tasks) if isinstance(tasks, list) else 0,
        verdict=None if verdict is None else verdict.value,
    )


def _cards(
    record: RunRecord, tasks: list[TaskLine], facts: EvalFacts, live_calls: int
) -> list[Card]:
    summary = record.summary
    scored = [task for task in tasks if task.scored]
    if summary is None:
        cards = [
            Card("Status", record.status.value, record.status.value),
            Card("Scored", f"{len(scored)} of {facts.task_count} tasks"),
            Card("Passed", f"{sum(t.passed for t in scored)} of {len(scored)} tasks"),
        ]
    else:
        cards = [
            Card("Score", f"{summary.aggregateScore:.2f}", "pass" if summary.passed else "fail"),
            Card(
                "Passed",
                f"{summary.passedCount} of {summary.taskCount} tasks",
                "pass" if summary.passed else "fail",
            ),
        ]
        if summary.regression is not None:
            verdict = summary.regression.verdict
            delta = f"{summary.regression.scoreDelta:+.2f}"
            value = f"{verdict.value} ({delta})" if verdict else delta
            cards.append(Card("Against baseline", value, verdict.value if verdict else "plain"))
    misses = sum(task.fixtureMissCount for task in tasks)
    cards.append(Card("Fixture misses", str(misses), "fail" if misses else "plain"))
    cards.append(Card("Live tool calls", str(live_calls)))
    latencies = [task.latencyMs for task in scored if task.latencyMs is not None]
    if latencies:
        cards.append(Card("Mean task latency", f"{sum(latencies) / len(latencies):.0f} ms"))
    if summary is not None and summary.totalCostUsd is not None:
        cards.append(Card("Cost", f"${summary.totalCostUsd:.4f}"))
    if summary is not None:
        # docs/graders.md, "Calibration": these tasks' scores count toward no verdict.
        cards.extend(Card("Advisory", note) for note in summary.advisory_notes())
    return cards


def _href(base: str, show: str, sort: str, direction: str) -> str:
    query = {"show": show, "sort": sort, "dir": direction}
    given = {name: value for name, value in query.items() if value and value != "all"}
    return f"{base}?{urlencode(given)}" if given else base


def _columns(base: str, show: str, sort: str, direction: str) -> list[Column]:
    labels = {
        "task": "Task",
        "result": "Result",
        "score": "Score",
        "trials": "Trials passed",
        "misses": "Misses",
        "latency": "Latency",
        "verdict": "Verdict",
        "p": "p-value",
    }
    columns = []
    for key, label in labels.items():
        current = key == sort
        flipped = "desc" if current and direction != "desc" else "asc"
        state = ("descending" if direction == "desc" else "ascending") if current else "none"
        columns.append(Column(key, label, _href(base, show, key, flipped), state))
    return columns
