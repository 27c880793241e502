"""An erasure that starts while a copy of its run is being taken waits for it, then erases it.

A copy (an eval run's fixtures derived from a source, a replay fork of a run) share-locks
its source runs while its transaction is open (`RunsRepo.hold`); an erasure locks each run
it erases first. So on PostgreSQL, an erasure of the source started from another connection
waits until the copy commits, and its cascade then finds the copy and erases it by the
cascade's rule (tests/engine/test_erasure_cascade.py). An eval run copying a judge source's
recorded judgements holds that source the same way. SQLite serialises its writers: there
an erasure cannot start while the copy's transaction is open, and only PostgreSQL is run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path

import pytest
from sqlalchemy import select, text

from _backends import Backend, PostgresDatabases
from _hosts import TENANT, running_host
from _judged import judged_project
from wopeval.engine.eval_runs.eval_plan import JUDGE_COPY
from wopeval.engine.runlog.log_writer import OnInsert
from wopeval.engine.runs.erasure import Erasure, erase_tool_content
from wopeval.hosting.host import Host
from wopeval.store import RunRecord, UnitOfWork
from wopeval.store.tables import derived_fixtures, tool_calls
from wopeval.wire import errors
from wopeval.wire.principal import Principal
from wopeval.wire.runs import CreateRunRequest, ForkRunRequest

pytestmark = pytest.mark.postgres

PRINCIPAL = Principal(TENANT, "key-test")
SCRIPT = {
    "calls": [
        {"tool": "conformance.eval:counter", "args": {"op": "inc", "key": "race"}},
        {"tool": "conformance.eval:counter", "args": {"op": "read", "key": "conformance-recorded"}},
    ],
    "answer": "done",
}
WAITING_ON_A_LOCK = text(
    "SELECT count(*) FROM pg_stat_activity"
    " WHERE datname = current_database() AND wait_event_type = 'Lock'"
)

Copy = Callable[[Host, str, OnInsert], Coroutine[None, None, RunRecord]]


@pytest.fixture
def postgres(postgres_databases: PostgresDatabases) -> Backend:
    return Backend("postgres", postgres_databases)


async def _derive(host: Host, source: str, on_insert: OnInsert) -> RunRecord:
    request = CreateRunRequest(
        mode="eval",
        evalSuiteRef="conformance-eval-recorded-replay",
        agentId="conformance.scripted-agent",
        fixtureRuns={"record": source},
    )
    return await host.engine.create_eval_run(PRINCIPAL, request, on_insert=on_insert)


async def _fork(host: Host, source: str, on_insert: OnInsert) -> RunRecord:
    request = ForkRunRequest(fromSeq=0, mode="replay")
    return await host.engine.fork_run(PRINCIPAL, source, request, on_insert=on_insert)


async def _erase_while_copying(host: Host, source: str, copy: Copy) -> tuple[str, Erasure]:
    """Take the copy and hold its transaction open; erase the source from another connection;
    check the erasure waits on a lock; let the copy commit; the copy's run and the erasure."""
    taken, release = asyncio.Event(), asyncio.Event()

    async def hold_open(uow: UnitOfWork, stored: RunRecord) -> None:
        taken.set()
        await release.wait()

    async def erase() -> Erasure:
        async with host.store.transaction() as uow:
            return await erase_tool_content(uow, TENANT, source)

    copying = asyncio.create_task(copy(host, source, hold_open))
    await taken.wait()
    erasing = asyncio.create_task(erase())
    waiting = 0
    for _ in range(3000):  # a bound against hanging, not a timing
        async with host.store.reading() as uow:
            waiting = int((await uow.connection.execute(WAITING_ON_A_LOCK)).scalar_one())
        if waiting or erasing.done():
            break
        await asyncio.sleep(0.01)
    assert not erasing.done(), "the erasure did not wait for the copy being taken"
    assert waiting == 1
    release.set()
    record = await copying
    try:
        erased = await erasing
    except errors.RunStateConflict:
        # The copy's run had not ended when the erasure reached it (erasure.ACTIVE_COPY).
        await host.engine.wait_idle()
        erased = await erase()
    await host.engine.wait_idle()
    return record.run_id, erased


async def _finished_source(host: Host) -> str:
    record = await host.engine.create_workflow_run(
        PRINCIPAL, CreateRunRequest(workflowId="conformance-agent-counter", inputs=SCRIPT)
    )
    await host.engine.wait_idle()
    return record.run_id


async def _derived_copy_erased(host: Host, evaluated: str, erased: Erasure) -> None:
    # The cascade reached the eval run and erased the fixtures derived for it.
    assert (erased.runs, erased.copies) == (2, 1)
    async with host.store.reading() as uow:
        copies = (await uow.connection.execute(
            select(derived_fixtures.c.entries, derived_fixtures.c.erased_at)
            .where(derived_fixtures.c.eval_run_id == evaluated)
        )).all()  # fmt: skip
    assert [(entries, at is not None) for entries, at in copies] == [(None, True)]


async def _replayed_record_erased(host: Host, fork: str, erased: Erasure) -> None:
    # The source's two calls and the replay's copy of them.
    assert erased == Erasure(runs=2, calls=4, copies=0)
    async with host.store.reading() as uow:
        inputs = (await uow.connection.execute(
            select(tool_calls.c.inputs).where(tool_calls.c.run_id == fork)
        )).scalars().all()  # fmt: skip
    assert inputs == [None, None]


@pytest.mark.parametrize(
    ("copy", "erased_copy"),
    [(_derive, _derived_copy_erased), (_fork, _replayed_record_erased)],
    ids=["derived-fixtures", "replay-fork"],
)
def test_an_erasure_waits_for_a_copy_being_taken_and_then_erases_it(
    postgres: Backend,
    tmp_path: Path,
    copy: Copy,
    erased_copy: Callable[[Host, str, Erasure], Coroutine[None, None, None]],
) -> None:
    async def scenario() -> None:
        async with running_host(postgres, tmp_path) as host:
            source = await _finished_source(host)
            copied, erased = await _erase_while_copying(host, source, copy)
            await erased_copy(host, copied, erased)

    asyncio.run(scenario())


def test_an_erasure_of_a_judge_source_waits_for_the_copy_of_its_judgements(
    postgres: Backend, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with judged_project(postgres, tmp_path) as project:
            source = await project.judged_source()

            async def copy_judgements(host: Host, source: str, on_insert: OnInsert) -> RunRecord:
                return await project.evaluate(project.request(source), on_insert)

            copied, erased = await _erase_while_copying(project.host, source, copy_judgements)
            # The source and the eval run that copied its judgements, the copy erased.
            assert (erased.runs, erased.copies) == (2, 1)
            async with project.host.store.reading() as uow:
                copies = (await uow.connection.execute(
                    select(derived_fixtures.c.task_id, derived_fixtures.c.model_entries)
                    .where(derived_fixtures.c.eval_run_id == copied)
                )).all()  # fmt: skip
            assert copies == [(JUDGE_COPY, None)]

    asyncio.run(scenario())
