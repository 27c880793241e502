"""A judge's calibration against people's labels, and whether the judge may gate
(docs/graders.md, "Calibration"; the arithmetic is evals/_calibration.py).

Calibrating pairs, for each eval-run task a person labelled pass or fail (their latest
label), the judge's verdict on that task — its `passed` in the run's summary — when
every trial of it was graded by the judge at its *current* digest. A verdict made at
another digest (another model, prompt, scale or threshold) is another judge's and is
left out; so is an unjudged one. Each calibration is recorded, tied to the digest.

A `gate = true` judge gates a run only while its newest calibration at its current
digest clears the project's floor; otherwise the run's rubric tasks are advisory.
"""

from __future__ import annotations

import secrets
from datetime import datetime

from wopeval import evals
from wopeval.engine.catalog.catalog import Catalog
from wopeval.engine.catalog.judges import Judge
from wopeval.engine.runlog.steps import now, timestamp
from wopeval.engine.runs.feedback import task_labels
from wopeval.store import CalibrationRow, OwnedRun, Store, StoredLabel, UnitOfWork
from wopeval.wire import errors, ids
from wopeval.wire.annotations import PASS
from wopeval.wire.calibration import (
    CalibrationReport,
    ConfusionTable,
    Disagreement,
    Floor,
)
from wopeval.wire.principal import Principal
from wopeval.wire.runs import RunKind
from wopeval.wire.summary import Advisory


async def calibrate_judge(
    store: Store,
    catalog: Catalog,
    principal: Principal,
    judge_id: str,
    since: datetime | None = None,
) -> CalibrationReport:
    """Calibrate the judge against the caller's tenant's labels and record it."""
    judge = catalog.judges.get(judge_id)
    if judge is None:
        raise errors.NotFound("No such judge.")
    digest = judge.rules.digest
    latest = _latest_labels(await task_labels(store, principal.tenant, since))
    async with store.transaction() as uow:
        pairs: list[evals.LabelledVerdict] = []
        runs: dict[str, OwnedRun | None] = {}
        for (run_id, task_id), human_passed in latest.items():
            if run_id not in runs:
                runs[run_id] = await uow.runs.get(principal.tenant, run_id)
            verdict = await _verdict(uow, runs[run_id], task_id, digest)
            if verdict is not None:
                pairs.append(evals.LabelledVerdict(f"{run_id}/{task_id}", verdict, human_passed))
        measured = evals.calibrate(pairs)
        floor = catalog.calibration_floor
        at = now()
        report = CalibrationReport(
            calibrationId=secrets.token_hex(16),
            judgeId=judge_id,
            digest=digest,
            gate=judge.rules.gate,
            labels=measured.labels,
            accuracy=measured.accuracy,
            kappa=measured.kappa,
            confusion=ConfusionTable(
                bothPass=measured.confusion.both_pass,
                judgePassHumanFail=measured.confusion.judge_pass_human_fail,
                judgeFailHumanPass=measured.confusion.judge_fail_human_pass,
                bothFail=measured.confusion.both_fail,
            ),
            disagreements=[_disagreement(case) for case in measured.disagreements],
            floor=Floor(kappaMin=floor.kappa_min, minLabels=floor.min_labels),
            clears=measured.clears(floor),
            since=None if since is None else timestamp(since),
            calibratedAt=timestamp(at),
        )
        await uow.calibrations.add(
            CalibrationRow(
                calibration_id=report.calibrationId,
                tenant=principal.tenant,
                judge_id=judge_id,
                digest=digest,
                labels=report.labels,
                kappa=report.kappa,
                report=report.to_wire(),
                created_at=at,
            )
        )
    return report


async def judge_standing(
    uow: UnitOfWork, tenant: str, judge: Judge, floor: evals.CalibrationFloor
) -> Advisory | None:
    """None when the judge gates: `gate = true` and its newest calibration at its current
    digest clears `floor`; else why its tasks are advisory. The floor is the project's
    today, so raising it takes a gate away without calibrating again."""
    rules = judge.rules
    latest = await uow.calibrations.latest(tenant, rules.judge_id, rules.digest)
    kappa = None if latest is None else latest.kappa
    labels = 0 if latest is None else latest.labels
    if rules.gate and floor.admits(labels, kappa):
        return None
    return Advisory(judgeId=rules.judge_id, gate=rules.gate, kappa=kappa, labels=labels)


def _latest_labels(labels: list[StoredLabel]) -> dict[tuple[str, str], bool]:
    """Each labelled task's last word (labels come oldest first): pass is True."""
    return {(label.run_id, label.node_id): label.label == PASS for label in labels}


async def _verdict(
    uow: UnitOfWork, record: OwnedRun | None, task_id: str, digest: str
) -> bool | None:
    """The judge's verdict on the run's task at `digest`; None when it gave none there."""
    if record is None or record.kind is not RunKind.EVAL or record.summary is None:
        return None
    scored = record.summary.task(task_id)
    trials = await uow.trials.of_run(record.handle, task_id)
    if scored is None or not trials:
        return None
    for trial in trials:
        grade = trial.detail.get("grade") or {}
        judge = grade.get("judge") or {}
        # Another digest is another judge; an unjudged trial is no verdict at all.
        if judge.get("digest") != digest or judge.get("unjudged") is not None:
            return None
    return scored.passed


def _disagreement(case: evals.LabelledVerdict) -> Disagreement:
    run_id, _, task_id = case.ref.rpartition("/")  # a task id has no `/` (TASK_ID_PATTERN)
    return Disagreement(
        runId=run_id,
        taskId=task_id,
        judgePassed=case.judge_passed,
        humanPassed=case.human_passed,
        dashboardPath=f"/ui/evals/{ids.project(run_id)}/tasks/{task_id}",
    )
