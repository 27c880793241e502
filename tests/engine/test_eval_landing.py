"""While a task's trial lands, the next task runs: a trial gives its place among the eval's
`concurrency` up once it has run, before its step is durable, so a group commits while the
next group's trials run (engine/eval_runs/eval_runner.py `run_eval`)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from _backends import Backend
from _hosts import TENANT, running_host
from wopeval.engine.runlog.steps import Step
from wopeval.settings import EvalFeatures
from wopeval.wire.principal import Principal
from wopeval.wire.runs import CreateRunRequest, RunStatus

PRINCIPAL = Principal(TENANT, "key-test")
TOOL = "crm:lookup"
WAIT_SECONDS = 30.0
"""How long the first trial's step is held for the second trial at most: a bound on a
deadlock, not a timing (the second trial runs at once, or never)."""


def _task(name: str) -> dict[str, Any]:
    call = {"tool": TOOL, "args": {"id": name}}
    return {
        "taskId": name,
        "input": {"calls": [call], "answer": name},
        "expected": {"kind": "golden", "match": {"strategy": "exact", "value": name}},
        "fixtures": {"toolResponses": [{**call, "response": {"ok": True}}], "onMiss": "fail"},
    }


SUITE = {
    "suiteId": "engine.evals.landing",
    "version": "1.0.0",
    "modes": ["golden"],
    "tasks": [_task("a"), _task("b")],
}


def test_the_next_trial_runs_while_the_first_one_lands(
    backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> None:
        features = EvalFeatures(concurrency=1)
        async with running_host(backend, tmp_path / "data", eval=features) as host:
            await host.engine.publish_suite(PRINCIPAL, SUITE)
            writer = host.engine.writer
            submit = writer.submit
            trials: list[Step] = []
            second = asyncio.Event()

            async def held(run_id: str, tenant: str, step: Step, *rest: Any) -> bool:
                # The first trial's step lands only once the second trial has run: with one
                # trial at a time, that is only if the first gave its place up before landing.
                if step.trials:
                    trials.append(step)
                    if len(trials) == 1:
                        await asyncio.wait_for(second.wait(), WAIT_SECONDS)
                    else:
                        second.set()
                return await submit(run_id, tenant, step, *rest)

            monkeypatch.setattr(writer, "submit", held)
            record = await host.engine.create_eval_run(
                PRINCIPAL,
                CreateRunRequest(
                    mode="eval",
                    evalSuiteRef="engine.evals.landing@1.0.0",
                    agentId="conformance.scripted-agent",
                ),
            )
            await host.engine.wait_idle()
            final = await host.engine.get_run(PRINCIPAL, record.run_id)
            assert final.status is RunStatus.COMPLETED, final.error
            assert final.summary is not None
            assert (final.summary.taskCount, final.summary.passedCount) == (2, 2)
            assert len(trials) == 2

    asyncio.run(scenario())
