"""An immediate pause cuts only units that have not handed their last step to the log: an
eval trial or a workflow node whose landing is on its way lands once and is not run again
(before, it landed and then ran again after the resume: a trial's second landing failed the
eval run on the trial's key, a node completed twice)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from pathlib import Path
from typing import Any

from sqlalchemy import select

from _backends import Backend
from _hosts import TENANT, running_host
from wopeval.settings import EvalFeatures
from wopeval.store import tables
from wopeval.wire import errors, json_text
from wopeval.wire.principal import Principal
from wopeval.wire.runs import CreateRunRequest, RunStatus

TASKS = 400
CALLS = 3
TOOL = "cut:lookup"


def _suite() -> dict[str, Any]:
    def args(task: int, call: int) -> dict[str, Any]:
        return {"task": task, "call": call}

    return {
        "suiteId": "cut.evals.pauses",
        "version": "1.0.0",
        "modes": ["golden"],
        "tasks": [
            {
                "taskId": f"t{task:04d}",
                "input": {
                    "calls": [{"tool": TOOL, "args": args(task, c)} for c in range(CALLS)],
                    "answer": f"answer-{task}",
                },
                "expected": {
                    "kind": "golden",
                    "match": {"strategy": "exact", "value": f"answer-{task}"},
                },
                "fixtures": {
                    "toolResponses": [
                        {"tool": TOOL, "args": args(task, c), "response": {"v": c}}
                        for c in range(CALLS)
                    ],
                    "onMiss": "fail",
                },
            }
            for task in range(TASKS)
        ],
    }


async def test_immediate_pauses_of_a_busy_eval_land_each_trial_once(
    backend: Backend, tmp_path: Path
) -> None:
    settings = {"eval": EvalFeatures(max_tasks_per_suite=TASKS, concurrency=32)}
    async with running_host(backend, tmp_path, **settings) as host:
        principal = Principal(TENANT, "key")
        await host.engine.publish_suite(principal, _suite())
        request = CreateRunRequest(
            mode="eval", evalSuiteRef="cut.evals.pauses@1.0.0", agentId="conformance.scripted-agent"
        )
        record = await host.engine.create_eval_run(principal, request)
        pauses = 0
        # Pause while trials are landing (32 at a time), again and again, until it ends.
        while True:
            try:
                await host.engine.pause_run(principal, record.run_id, "immediate")
            except errors.RunTerminal:
                break
            pauses += 1
            await asyncio.sleep(0.005)
            await host.engine.resume_run(principal, record.run_id)
            await asyncio.sleep(0.01)
        await host.engine.wait_idle()
        final = await host.engine.get_run(principal, record.run_id)
        async with host.store.reading() as uow:
            docs = (
                await uow.connection.execute(
                    select(tables.events.c.doc).where(
                        tables.events.c.run_id == record.run_id,
                        tables.events.c.type == "eval.scored",
                    )
                )
            ).scalars()
            scored = Counter(json_text.parse(doc)["payload"]["taskId"] for doc in docs)
    assert pauses > 0
    assert final.status is RunStatus.COMPLETED, final.error
    assert final.summary is not None
    assert final.summary.taskCount == TASKS
    assert len(scored) == TASKS
    assert set(scored.values()) == {1}


async def test_immediate_pauses_of_busy_workflow_runs_complete_each_node_once(
    backend: Backend, tmp_path: Path
) -> None:
    async with running_host(backend, tmp_path) as host:
        principal = Principal(TENANT, "key")
        request = CreateRunRequest(workflowId="conformance-noop")
        records = [await host.engine.create_workflow_run(principal, request) for _ in range(32)]
        for _ in range(5):
            for record in records:
                with contextlib.suppress(errors.RunTerminal, errors.RunStateConflict):
                    await host.engine.pause_run(principal, record.run_id, "immediate")
            await asyncio.sleep(0.005)
            for record in records:
                with contextlib.suppress(errors.RunTerminal, errors.RunStateConflict):
                    await host.engine.resume_run(principal, record.run_id)
        await host.engine.wait_idle()
        async with host.store.reading() as uow:
            completed = Counter(
                (
                    await uow.connection.execute(
                        select(tables.events.c.run_id).where(
                            tables.events.c.type == "node.completed"
                        )
                    )
                ).scalars()
            )
        for record in records:
            final = await host.engine.get_run(principal, record.run_id)
            assert final.status is RunStatus.COMPLETED, final.error
    assert completed == dict.fromkeys((record.run_id for record in records), 1)
