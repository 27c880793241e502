"""The compare page: a baseline and a candidate eval run of one suiteId, task by task.

The pairing is the host's own paired verdict (`evals.with_regression`, the
host's alpha), computed from the two stored summaries, so the page agrees
with what an eval run with that `baselineRunId` reports. Both runs load
through `Engine.get_run`; the regressed tasks' traces through `task_detail`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from urllib.parse import urlencode

from fastapi import APIRouter, Response

from wopeval import evals
from wopeval.api.deps import HostDep
from wopeval.api.served import ServedHost
from wopeval.api.ui._render import Chrome, render
from wopeval.api.ui._reviews import Review, task_reviews
from wopeval.api.ui._route import UiRoute
from wopeval.api.ui.deps import SessionDep
from wopeval.api.ui.eval_page import load_eval
from wopeval.engine.eval_runs.task_details import task_detail
from wopeval.reports._svg import Bar, Chart, delta_shapes
from wopeval.store import OwnedRun, RunFilter, RunRecord
from wopeval.wire import errors, ids
from wopeval.wire.runs import RunKind, RunStatus
from wopeval.wire.summary import TaskRegression, Verdict
from wopeval.wire.task_detail import TaskDetail, TrialDetail

router = APIRouter(prefix="/ui", route_class=UiRoute, include_in_schema=False)

CHOICES = 200
"""Completed eval runs the pickers offer, newest first."""
_RANK = {Verdict.REGRESSED: 0, Verdict.INCONCLUSIVE: 1, Verdict.IMPROVED: 2, Verdict.UNCHANGED: 3}


@dataclass(frozen=True)
class Choice:
    run_id: str
    label: str


@dataclass(frozen=True)
class SideBySide:
    """One regressed task's representative trial on each side."""

    task_id: str
    baseline: TrialDetail
    candidate: TrialDetail
    baseline_trials: str
    candidate_trials: str


@dataclass(frozen=True)
class Comparison:
    baseline_run_id: str
    candidate_run_id: str
    suite_id: str
    baseline_version: str
    candidate_version: str
    verdict: str
    score_delta: float
    baseline_score: float
    candidate_score: float
    rows: list[TaskRegression]
    """Paired tasks, regressed first, then inconclusive, improved, unchanged."""
    more_trials: dict[str, str]
    """Inconclusive task id → what more trials would do (`evals.MoreTrials.text`)."""
    baseline_only: list[str]
    candidate_only: list[str]
    chart: Chart
    traces: list[SideBySide]


@dataclass(frozen=True)
class CompareView:
    groups: dict[str, list[Choice]]
    """The pickers' choices by suiteId."""
    baseline: str
    """The baseline named in the query, as its picker's value (its id's path segment)."""
    candidate: str
    comparison: Comparison | None
    reviews: dict[str, Review]
    """The candidate's tasks' latest pass/fail labels (`labels.py`)."""
    back: str
    """This page, where a label's form comes back to."""


@router.get("/compare")
async def compare_page(
    session: SessionDep, host: HostDep, baseline: str = "", candidate: str = ""
) -> Response:
    # Each run the query names, in whichever form it names it, is refused or shown selected.
    before = await _finished(host, session, baseline) if baseline else None
    after = await _finished(host, session, candidate) if candidate else None
    comparison, reviews = None, {}
    if before is not None and after is not None:
        comparison = await _compare(host, before, after)
        reviews = await task_reviews(host, session, after)
    async with host.store.reading() as uow:
        finished: list[RunRecord] = list(
            await uow.runs.page(
                session.principal.tenant,
                limit=CHOICES,
                before_seq=None,
                where=RunFilter(kind=RunKind.EVAL.value, status=RunStatus.COMPLETED.value),
            )
        )
    offered = {record.run_id for record in finished}
    # A named run older than the newest CHOICES is offered too, so its picker shows it.
    for named in (before, after):
        if named is not None and named.run_id not in offered:
            finished.append(named)
            offered.add(named.run_id)
    picked = {
        "baseline": "" if before is None else ids.project(before.run_id),
        "candidate": "" if after is None else ids.project(after.run_id),
    }
    view = CompareView(
        groups=_choices(finished),
        baseline=picked["baseline"],
        candidate=picked["candidate"],
        comparison=comparison,
        reviews=reviews,
        back="/ui/compare?" + urlencode(picked),
    )
    return render("compare.html", Chrome(session, "compare", "Compare eval runs"), view)


async def _finished(host: ServedHost, session: SessionDep, segment: str) -> OwnedRun:
    """An eval run with a summary, refused as `GET /runs/{runId}/eval-summary` refuses."""
    record = await load_eval(host, session, segment)
    if not record.status.is_terminal:
        raise errors.RunStateConflict(
            "The eval run is still active.", details={"runStatus": record.status.value}
        )
    if record.summary is None:
        raise errors.NotFound("This eval run ended without a summary.")
    return record


async def _compare(host: ServedHost, baseline: OwnedRun, candidate: OwnedRun) -> Comparison:
    before, after = baseline.summary, candidate.summary
    # `_finished` refused a run without a summary.
    assert before is not None
    assert after is not None
    if before.suiteId != after.suiteId:
        raise errors.ValidationFailed(
            "Only eval runs of one suiteId can be compared "
            f"({before.suiteId} and {after.suiteId} differ)."
        )
    alpha = host.settings.eval.alpha
    judged = evals.with_regression(after, baseline.run_id, before, alpha).regression
    # with_regression always judges (include_verdict defaults to True).
    assert judged is not None
    assert judged.verdict is not None
    rows = sorted(judged.tasks or [], key=lambda t: (_RANK[t.verdict], t.delta, t.taskId))
    bars = [
        Bar(t.taskId, t.delta, f"{t.delta:+.2f} {t.verdict.value}", t.verdict.value) for t in rows
    ]
    regressed = [t.taskId for t in rows if t.verdict is Verdict.REGRESSED]
    async with host.store.reading() as uow:
        traces = [
            _side_by_side(
                await task_detail(uow, baseline, task_id, alpha=alpha),
                await task_detail(uow, candidate, task_id, alpha=alpha),
            )
            for task_id in regressed
        ]
    return Comparison(
        baseline_run_id=baseline.run_id,
        candidate_run_id=candidate.run_id,
        suite_id=after.suiteId,
        baseline_version=before.suiteVersion,
        candidate_version=after.suiteVersion,
        verdict=judged.verdict.value,
        score_delta=judged.scoreDelta,
        baseline_score=before.aggregateScore,
        candidate_score=after.aggregateScore,
        rows=rows,
        more_trials={
            task_id: more.text
            for task_id, more in evals.inconclusive_more_trials(before, after, alpha=alpha).items()
        },
        baseline_only=list(judged.baselineOnlyTaskIds or []),
        candidate_only=list(judged.candidateOnlyTaskIds or []),
        chart=delta_shapes(bars),
        traces=traces,
    )


def _side_by_side(baseline: TaskDetail, candidate: TaskDetail) -> SideBySide:
    """The candidate's first failing trial beside the baseline's trial of the same number."""
    shown = next((t for t in candidate.trialDetails if not t.passed), candidate.trialDetails[0])
    beside = next(
        (t for t in baseline.trialDetails if t.trial == shown.trial), baseline.trialDetails[0]
    )
    return SideBySide(
        task_id=candidate.taskId,
        baseline=beside,
        candidate=shown,
        baseline_trials=f"{baseline.passedTrials} of {baseline.trials} trials passed",
        candidate_trials=f"{candidate.passedTrials} of {candidate.trials} trials passed",
    )


def _choices(finished: list[RunRecord]) -> dict[str, list[Choice]]:
    groups: dict[str, list[Choice]] = defaultdict(list)
    for record in finished:
        summary = record.summary
        version = "?" if summary is None else summary.suiteVersion
        figure = "no score" if summary is None else f"score {summary.aggregateScore:.2f}"
        when = record.created_at.strftime("%Y-%m-%d %H:%M")
        label = f"{when} · {version} · {figure} · {record.run_id}"
        groups[str(record.suite_id)].append(Choice(record.run_id, label))
    return dict(sorted(groups.items()))
