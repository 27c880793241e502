"""An erasure that lands between the source lookup and the derived copy's insert wins.

The engine resolves a plan (the lookup), the source is erased, and only then
does the eval run's transaction try to keep the copy: it must be refused with
the uniform answer, and nothing of the run may be left behind. The same holds for a
judge source, whose recorded judgements an eval run copies.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import Table, func, select

from _backends import Backend
from _hosts import TENANT, running_host
from _judged import judged_project
from wopeval.engine.eval_runs.eval_plan import (
    UNUSABLE_JUDGE_SOURCE,
    UNUSABLE_SOURCE,
    resolve_eval,
)
from wopeval.engine.runs.erasure import erase_tool_content
from wopeval.hosting.host import Host
from wopeval.store.tables import derived_fixtures, runs
from wopeval.wire import errors
from wopeval.wire.principal import Principal
from wopeval.wire.runs import CreateRunRequest, RunStatus

SCRIPT = {
    "calls": [
        {"tool": "conformance.eval:counter", "args": {"op": "inc", "key": "race"}},
        {"tool": "conformance.eval:counter", "args": {"op": "read", "key": "conformance-recorded"}},
    ],
    "answer": "done",
}


async def _finished_source(host: Host, principal: Principal) -> str:
    record = await host.engine.create_workflow_run(
        principal, CreateRunRequest(workflowId="conformance-agent-counter", inputs=SCRIPT)
    )
    await host.engine.wait_idle()
    finished = await host.engine.get_run(principal, record.run_id)
    assert finished.status is RunStatus.COMPLETED
    return record.run_id


async def _count(host: Host, table: Table) -> int:
    async with host.store.reading() as uow:
        result = await uow.connection.execute(select(func.count()).select_from(table))
        return int(result.scalar_one())


def test_a_copy_is_refused_when_its_source_was_erased_after_the_lookup(
    backend: Backend, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with running_host(backend, tmp_path) as host:
            principal = Principal(TENANT, "key-test")
            source = await _finished_source(host, principal)
            request = CreateRunRequest(
                mode="eval",
                evalSuiteRef="conformance-eval-recorded-replay",
                agentId="conformance.scripted-agent",
                fixtureRuns={"record": source},
            )
            async with host.store.reading() as uow:
                plan = await resolve_eval(
                    request,
                    tenant=TENANT,
                    features=host.settings.eval,
                    catalog=host.catalog,
                    uow=uow,
                    live_tools=True,
                )
            async with host.store.transaction() as uow:
                await erase_tool_content(uow, TENANT, source)
            runs_before = await _count(host, runs)
            with pytest.raises(errors.ValidationFailed) as refused:
                async with host.store.transaction() as uow:
                    await plan.keep_copies(uow, TENANT, f"{TENANT}/{'0' * 32}")
            assert refused.value.message == UNUSABLE_SOURCE
            assert await _count(host, derived_fixtures) == 0
            assert await _count(host, runs) == runs_before

    asyncio.run(scenario())


def test_a_judge_copy_is_refused_when_its_source_was_erased_after_the_lookup(
    backend: Backend, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with judged_project(backend, tmp_path) as project:
            host = project.host
            source = await project.judged_source()
            async with host.store.reading() as uow:
                plan = await resolve_eval(
                    project.request(source),
                    tenant=TENANT,
                    features=host.settings.eval,
                    catalog=host.catalog,
                    uow=uow,
                    live_tools=True,
                )
            assert plan.judge is not None
            assert len(plan.judge.recorded) == 1
            async with host.store.transaction() as uow:
                await erase_tool_content(uow, TENANT, source)
            copies_before = await _count(host, derived_fixtures)
            with pytest.raises(errors.ValidationFailed) as refused:
                async with host.store.transaction() as uow:
                    await plan.keep_copies(uow, TENANT, f"{TENANT}/{'0' * 32}")
            assert refused.value.message == UNUSABLE_JUDGE_SOURCE
            assert await _count(host, derived_fixtures) == copies_before

    asyncio.run(scenario())
