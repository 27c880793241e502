"""An in-process eval's trial lands while its worker runs the next one (PostgreSQL;
engine/runlog/runlog.py `Handing`; SQLite's worker waits for each): a trial's step lost
on its way ends the run `store_unreachable` and nothing of its worker after it lands, and a
cancel mid-run lands each trial at most once, each task's `eval.scored` with its trial."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.exc import OperationalError

from _backends import Backend
from _hosts import TENANT, running_host
from wopeval.settings import EvalFeatures
from wopeval.store import tables
from wopeval.wire import json_text
from wopeval.wire.principal import Principal
from wopeval.wire.runs import CreateRunRequest, RunStatus

TASKS = 200
TOOL = "window:lookup"


def _suite() -> dict[str, Any]:
    args = {"q": 1}
    return {
        "suiteId": "window.evals.landing",
        "version": "1.0.0",
        "modes": ["golden"],
        "tasks": [
            {
                "taskId": f"t{task:04d}",
                "input": {"calls": [{"tool": TOOL, "args": args}], "answer": "a"},
                "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "a"}},
                "fixtures": {
                    "toolResponses": [{"tool": TOOL, "args": args, "response": {"v": 1}}],
                    "onMiss": "fail",
                },
            }
            for task in range(TASKS)
        ],
    }


async def _started(host: Any) -> str:
    principal = Principal(TENANT, "key")
    await host.engine.publish_suite(principal, _suite())
    request = CreateRunRequest(
        mode="eval", evalSuiteRef="window.evals.landing@1.0.0", agentId="conformance.scripted-agent"
    )
    record = await host.engine.create_eval_run(principal, request)
    return str(record.run_id)


async def _landed(host: Any, run_id: str) -> tuple[Counter[str], Counter[str], list[str]]:
    """Each task's trial rows and `eval.scored` events, and the run's event types."""
    async with host.store.reading() as uow:
        trials = (
            await uow.connection.execute(
                select(tables.task_trials.c.task_id).where(tables.task_trials.c.run_id == run_id)
            )
        ).scalars()
        docs = (
            await uow.connection.execute(
                select(tables.events.c.doc)
                .where(tables.events.c.run_id == run_id)
                .order_by(tables.events.c.sequence)
            )
        ).scalars()
        parsed = [json_text.parse(doc) for doc in docs]
    scored = Counter(doc["payload"]["taskId"] for doc in parsed if doc["type"] == "eval.scored")
    return Counter(trials), scored, [doc["type"] for doc in parsed]


@pytest.mark.parametrize("lost", ["t0100", f"t{TASKS - 1:04d}"], ids=["mid-run", "last"])
async def test_a_trial_lost_on_its_way_ends_the_run_store_unreachable(
    backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lost: str
) -> None:
    """Mid-run, or the last task's (its worker's last step, waited for before the run's
    end)."""
    settings = {"eval": EvalFeatures(max_tasks_per_suite=TASKS, concurrency=8)}
    async with running_host(backend, tmp_path, **settings) as host:
        writer = host.engine.writer
        real = writer._write_once

        async def lossy(batch: Any) -> list[bool]:
            # Every transaction that carries the lost task's trial fails as a connection
            # lost under it: its group's other steps then land one by one, it does not.
            if any(row.task_id == lost for queued in batch for row in queued.step.trials):
                raise OperationalError("COMMIT", None, ConnectionError("server closed"))
            return await real(batch)

        monkeypatch.setattr(writer, "_write_once", lossy)
        run_id = await _started(host)
        await host.engine.wait_idle()
        final = await host.engine.get_run(Principal(TENANT, "key"), run_id)
        trials, scored, types = await _landed(host, run_id)
    assert final.status is RunStatus.FAILED
    assert final.error is not None
    assert final.error.code == "store_unreachable"
    assert lost not in trials
    assert lost not in scored
    assert "eval.completed" not in types
    assert set(trials.values()) == {1}
    assert trials == scored
    if lost == "t0100":
        # Nothing of the run after the lost trial, but what the other workers had on the way.
        assert len(trials) < TASKS - 1


async def test_a_cancel_mid_run_lands_each_trial_at_most_once(
    backend: Backend, tmp_path: Path
) -> None:
    settings = {"eval": EvalFeatures(max_tasks_per_suite=TASKS, concurrency=32)}
    async with running_host(backend, tmp_path, **settings) as host:
        run_id = await _started(host)
        principal = Principal(TENANT, "key")
        for _ in range(5000):  # until some trial landed
            if (await _landed(host, run_id))[0]:
                break
            await asyncio.sleep(0.002)
        await host.engine.cancel_run(principal, run_id, "enough")
        await host.engine.wait_idle()
        final = await host.engine.get_run(principal, run_id)
        trials, scored, types = await _landed(host, run_id)
    assert final.status is RunStatus.CANCELLED
    assert set(trials.values()) == {1}
    assert trials == scored
    assert types[-1] == "run.cancelled"
