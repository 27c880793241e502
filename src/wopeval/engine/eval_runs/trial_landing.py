"""Exactly-once eval trials on top of at-least-once work (queue mode).

A queued eval's trials run in jobs that a crash, a stall or a shutdown may run
again, so one trial can reach the log more than once. Here each trial's step is
admitted under its run row's lock (a `Fence`, runlog/fence.py), which makes every
decision about the run race-free:

- a trial already in `task_trials` under its `(run_id, task_id, trial)` key
  lands nothing (`ALREADY_LANDED`): a second commit is a no-op;
- the task's `eval.scored` lands with the trial that makes the task complete,
  built from the outcomes of its other trials (stored, or landed earlier in the
  same transaction: `Locked`, runlog/fence.py);
- `eval.completed` and `run.completed` land with the run's last trial, if the
  run is `running` then; a run paused at that moment ends with its resume
  (`complete_if_done`).

The run's `landed_trials` counter, moved in the same transaction, says when
the last trial lands without counting rows. In-process runs (one executor per
database) keep their own order of events (eval_runner.py).
"""

from __future__ import annotations

from wopeval import evals
from wopeval.engine.eval_runs.eval_plan import EvalPlan
from wopeval.engine.eval_runs.eval_runner import finish, scored
from wopeval.engine.runlog.fence import ALREADY_LANDED, Landing, Locked
from wopeval.engine.runlog.steps import RunUpdate, Step, now
from wopeval.store import TrialCounts, UnitOfWork
from wopeval.wire.runs import RunStatus


async def land_trial(uow: UnitOfWork, locked: Locked, step: Step, plan: EvalPlan) -> Landing:
    """How a step of a queued eval lands: as it is, with what its trial completes, or not
    at all when its trial is already in the log."""
    if not step.trials:
        return Landing()
    if len(step.trials) != 1:
        raise ValueError("a queued eval step carries at most one trial")
    (row,) = step.trials
    others = await locked.task_trials(uow, row.task_id)
    if any(counted.trial == row.trial for counted in others):
        return ALREADY_LANDED
    extra = Step()
    task_plan = plan.task(row.task_id)
    task_trials = sorted([*others, row.counts()], key=lambda counted: counted.trial)
    if len(task_trials) == task_plan.trials:
        extra.emit(scored(plan, task_plan, [_outcome(counted) for counted in task_trials]))
    run = locked.run
    if run.landed_trials + 1 < plan.trial_count or run.status is not RunStatus.RUNNING:
        return Landing(extra)
    ending = await _completion(uow, locked, plan, latest=row.counts(), invoked=step.agent_ids())
    extra.extend(ending.extra)
    return Landing(extra, ending.to, ending.update)


async def complete_if_done(uow: UnitOfWork, locked: Locked, plan: EvalPlan) -> Landing:
    """With every trial landed (the last one while the run was paused), the run's end
    lands now; otherwise nothing more."""
    if locked.run.landed_trials < plan.trial_count:
        return Landing()
    return await _completion(uow, locked, plan, latest=None, invoked=set())


async def invoked_agent_ids(uow: UnitOfWork, locked: Locked, also: set[str]) -> list[str]:
    """The run row's `agent_ids` at its end: every agent its log shows invoked, with those
    of this transaction's steps."""
    stored = await uow.events.invoked_agents(locked.run.handle)
    return sorted(set(stored) | locked.invoked | also)


async def _completion(
    uow: UnitOfWork,
    locked: Locked,
    plan: EvalPlan,
    *,
    latest: TrialCounts | None,
    invoked: set[str],
) -> Landing:
    counted = await locked.all_trials(uow)
    if latest is not None:
        counted.append(latest)
    outcomes: dict[str, list[evals.TrialOutcome]] = {}
    for trial in sorted(counted, key=lambda item: (item.task_id, item.trial)):
        outcomes.setdefault(trial.task_id, []).append(_outcome(trial))
    terminal = finish(plan, outcomes, alpha=plan.alpha, regression_verdict=plan.regression_verdict)
    terminal.step.emit(terminal.final_event())
    update = RunUpdate(
        completed_at=now(),
        outputs=terminal.outputs,
        summary=terminal.summary,
        agent_ids=await invoked_agent_ids(uow, locked, invoked),
    )
    return Landing(terminal.step, terminal.status, update)


def _outcome(counted: TrialCounts) -> evals.TrialOutcome:
    return evals.TrialOutcome(
        passed=counted.passed,
        latency_ms=counted.latency_ms,
        fixture_miss_count=counted.fixture_misses,
    )
