"""`run_eval`'s workers: at most `concurrency` tasks at once, each task once, started in the
plan's order, and the run's summary made of the entries the tasks' `eval.scored` came from."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, cast

import pytest

from wopeval import evals
from wopeval.engine.eval_runs import eval_runner
from wopeval.engine.eval_runs.eval_plan import EvalPlan, TaskPlan
from wopeval.engine.eval_runs.eval_runner import EvalContext, run_eval
from wopeval.engine.runlog.runlog import Handing
from wopeval.engine.runs.outcome import Terminal
from wopeval.wire.summary import TaskSummary


def _summary(task_id: str) -> TaskSummary:
    return TaskSummary(
        taskId=task_id,
        score=1.0,
        passed=True,
        latencyMs=0,
        trials=1,
        passedTrials=1,
        fixtureMissCount=0,
    )


async def _run(
    monkeypatch: pytest.MonkeyPatch, tasks: int, concurrency: int
) -> tuple[list[str], int, dict[str, Any]]:
    """Run `tasks` stand-in tasks; what started in which order, how many ran at once at
    most, and what `finish` was handed."""
    started: list[str] = []
    running = [0, 0]

    async def run_task(
        plan: EvalPlan, task_plan: TaskPlan, context: EvalContext, handing: Handing
    ) -> tuple[list[evals.TrialOutcome], TaskSummary]:
        task_id = task_plan.task.taskId
        started.append(task_id)
        running[0] += 1
        running[1] = max(running[1], running[0])
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        running[0] -= 1
        return [evals.TrialOutcome(passed=True, latency_ms=0)], _summary(task_id)

    handed: dict[str, Any] = {}

    def finish(plan: EvalPlan, outcomes: Any, **options: Any) -> Terminal:
        handed.update(options, outcomes=dict(outcomes))
        return cast(Terminal, None)

    monkeypatch.setattr(eval_runner, "run_task", run_task)
    monkeypatch.setattr(eval_runner, "finish", finish)
    plan = SimpleNamespace(
        tasks=tuple(
            SimpleNamespace(task=SimpleNamespace(taskId=f"t{index:02d}")) for index in range(tasks)
        )
    )
    context = SimpleNamespace(
        concurrency=concurrency,
        alpha=0.05,
        regression_verdict=True,
        log=SimpleNamespace(overlaps=False),
    )
    await run_eval(cast(EvalPlan, plan), cast(EvalContext, context))
    return started, running[1], handed


async def test_at_most_concurrency_tasks_run_at_once_each_once_in_plan_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started, most, handed = await _run(monkeypatch, tasks=10, concurrency=3)
    assert started == [f"t{index:02d}" for index in range(10)]
    assert most == 3
    assert sorted(handed["outcomes"]) == started


async def test_fewer_tasks_than_concurrency_all_run_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started, most, _ = await _run(monkeypatch, tasks=2, concurrency=32)
    assert (len(started), most) == (2, 2)


async def test_the_run_s_summary_is_made_of_the_task_s_own_entries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, _, handed = await _run(monkeypatch, tasks=3, concurrency=2)
    assert handed["summaries"] == {f"t{index:02d}": _summary(f"t{index:02d}") for index in range(3)}
