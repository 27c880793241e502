"""Erasure reaches every copy once and counts what it erased; retention erases what expired.

A source run, an eval run served fixtures derived from it, and a replay fork of that eval
run (which copies its record and its derived copies): erasing the source erases all three,
each once, and a run outside the cascade keeps its content. The retention purge erases the
runs that ended before its cut-off, through the same cascade, and sums what each erased.
A copy that has not ended yet refuses the erasure whole; retention leaves that run for later.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select, update

from _backends import Backend
from _handles import handle_of
from _hosts import TENANT, running_host
from wopeval.engine.runlog.steps import now
from wopeval.engine.runs.erasure import (
    ACTIVE_COPY,
    ERASED_MESSAGE,
    Erasure,
    Purged,
    erase_tool_content,
    purge_expired,
)
from wopeval.hosting.host import Host
from wopeval.store.tables import derived_fixtures, runs, task_trials, tool_calls
from wopeval.wire import errors
from wopeval.wire.principal import Principal
from wopeval.wire.runs import CreateRunRequest, ForkRunRequest, RunStatus

REPLAY_SUITE = "conformance-eval-recorded-replay"
KEY = "conformance-recorded"
SCRIPT = {
    "calls": [
        {"tool": "conformance.eval:counter", "args": {"op": "inc", "key": KEY}},
        {"tool": "conformance.eval:counter", "args": {"op": "read", "key": KEY}},
    ],
    "answer": "done",
}
PRINCIPAL = Principal(TENANT, "key-test")


async def _workflow_run(host: Host) -> str:
    record = await host.engine.create_workflow_run(
        PRINCIPAL, CreateRunRequest(workflowId="conformance-agent-counter", inputs=SCRIPT)
    )
    await host.engine.wait_idle()
    return record.run_id


async def _eval_run(host: Host, source: str) -> str:
    record = await host.engine.create_eval_run(
        PRINCIPAL,
        CreateRunRequest(
            mode="eval",
            evalSuiteRef=REPLAY_SUITE,
            agentId="conformance.scripted-agent",
            fixtureRuns={"record": source},
        ),
    )
    await host.engine.wait_idle()
    return record.run_id


async def _fork(host: Host, run_id: str) -> str:
    record = await host.engine.fork_run(PRINCIPAL, run_id, ForkRunRequest(fromSeq=0, mode="replay"))
    await host.engine.wait_idle()
    finished = await host.engine.get_run(PRINCIPAL, record.run_id)
    assert finished.status is RunStatus.COMPLETED
    return record.run_id


async def _held_content(host: Host, run_id: str) -> list[str]:
    """Where the run still holds tool content: its record, its events, its trials, the
    derived copies it took or was served."""
    held = []
    async with host.store.reading() as uow:
        connection = uow.connection
        calls = (await connection.execute(
            select(tool_calls.c.inputs).where(tool_calls.c.run_id == run_id)
        )).scalars().all()  # fmt: skip
        if any(inputs is not None for inputs in calls):
            held.append("tool_calls")
        logged = await uow.events.read(await handle_of(uow, run_id), after=-1)
        if any('"inputs"' in event.doc for event in logged):
            held.append("events")
        trials = (await connection.execute(
            select(task_trials.c.detail).where(task_trials.c.run_id == run_id)
        )).scalars().all()  # fmt: skip
        if KEY in json.dumps(trials):
            held.append("task_trials")
        copies = (await connection.execute(
            select(derived_fixtures.c.entries).where(derived_fixtures.c.eval_run_id == run_id)
        )).scalars().all()  # fmt: skip
        if any(entries is not None for entries in copies):
            held.append("derived_fixtures")
    return held


def test_erasure_reaches_every_copy_once_and_counts_what_it_erased(
    backend: Backend, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with running_host(backend, tmp_path) as host:
            source = await _workflow_run(host)
            evaluated = await _eval_run(host, source)
            fork = await _fork(host, evaluated)
            apart = await _workflow_run(host)
            everywhere = ["tool_calls", "events", "task_trials", "derived_fixtures"]
            assert await _held_content(host, evaluated) == everywhere
            assert await _held_content(host, fork) == everywhere

            async with host.store.transaction() as uow:
                erased = await erase_tool_content(uow, TENANT, source)
            # Two calls each; the eval run's copy and its fork's copy of it.
            assert erased == Erasure(runs=3, calls=6, copies=2)
            for run_id in (source, evaluated, fork):
                assert await _held_content(host, run_id) == [], run_id
            assert await _held_content(host, apart) == ["tool_calls", "events"]

            async with host.store.transaction() as uow:
                again = await erase_tool_content(uow, TENANT, source)
            assert again == Erasure(runs=3, calls=0, copies=0)

    asyncio.run(scenario())


def test_erasing_an_eval_run_erases_the_copies_it_was_served(
    backend: Backend, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with running_host(backend, tmp_path) as host:
            source = await _workflow_run(host)
            evaluated = await _eval_run(host, source)
            async with host.store.transaction() as uow:
                erased = await erase_tool_content(uow, TENANT, evaluated)
            assert erased == Erasure(runs=1, calls=2, copies=1)
            assert await _held_content(host, evaluated) == []
            assert await _held_content(host, source) == ["tool_calls", "events"]
            async with host.store.reading() as uow:
                trials = await uow.trials.of_run(await handle_of(uow, evaluated))
            assert [trial.erased for trial in trials] == [True]

    asyncio.run(scenario())


def test_retention_erases_the_runs_that_ended_before_its_cut_off_with_their_copies(
    backend: Backend, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with running_host(backend, tmp_path) as host:
            expired, also_expired, recent = [await _workflow_run(host) for _ in range(3)]
            # A replay of an expired run, and an eval run served from it, ended recently:
            # erased with it all the same.
            fork = await _fork(host, expired)
            evaluated = await _eval_run(host, expired)
            async with host.store.transaction() as uow:
                await uow.connection.execute(
                    update(runs)
                    .where(runs.c.run_id.in_([expired, also_expired]))
                    .values(completed_at=now() - timedelta(days=8))
                )
            assert await purge_expired(host.store, 7) == Purged(
                Erasure(runs=4, calls=8, copies=1), 0
            )
            for run_id in (expired, also_expired, fork, evaluated):
                assert await _held_content(host, run_id) == [], run_id
            assert await _held_content(host, recent) == ["tool_calls", "events"]
            assert await purge_expired(host.store, 7) == Purged(Erasure(0, 0, 0), 0)

    asyncio.run(scenario())


def test_an_erased_record_keeps_each_errors_code_and_never_its_words(
    backend: Backend, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with running_host(backend, tmp_path) as host:
            failing = {"calls": [{"tool": "conformance.eval:counter", "args": {"op": "bogus"}}]}
            record = await host.engine.create_workflow_run(
                PRINCIPAL,
                CreateRunRequest(workflowId="conformance-agent-counter", inputs=failing),
            )
            await host.engine.wait_idle()
            async with host.store.reading() as uow:
                (before,) = (await uow.connection.execute(
                    select(tool_calls.c.error).where(tool_calls.c.run_id == record.run_id)
                )).scalars().all()  # fmt: skip
            assert before["message"] != ERASED_MESSAGE
            async with host.store.transaction() as uow:
                await erase_tool_content(uow, TENANT, record.run_id)
            async with host.store.reading() as uow:
                (after,) = (await uow.connection.execute(
                    select(tool_calls.c.error).where(tool_calls.c.run_id == record.run_id)
                )).scalars().all()  # fmt: skip
            assert after == {"code": before["code"], "message": ERASED_MESSAGE}

    asyncio.run(scenario())


def test_an_erasure_reaching_a_copy_that_has_not_ended_is_refused_whole(
    backend: Backend, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with running_host(backend, tmp_path) as host:
            source = await _workflow_run(host)
            evaluated = await _eval_run(host, source)

            async def set_status(run_id: str, status: RunStatus) -> None:
                async with host.store.transaction() as uow:
                    await uow.connection.execute(
                        update(runs).where(runs.c.run_id == run_id).values(status=status.value)
                    )

            # The eval run that copied the source is still running (as it would be, had the
            # erasure come a moment sooner): it would record what it was served again.
            await set_status(evaluated, RunStatus.RUNNING)
            with pytest.raises(errors.RunStateConflict) as refused:
                async with host.store.transaction() as uow:
                    await erase_tool_content(uow, TENANT, source)
            assert refused.value.message == ACTIVE_COPY
            assert await _held_content(host, source) == ["tool_calls", "events"]
            everywhere = ["tool_calls", "events", "task_trials", "derived_fixtures"]
            assert await _held_content(host, evaluated) == everywhere

            # Retention leaves it for its next purge, and goes on with the rest.
            async with host.store.transaction() as uow:
                await uow.connection.execute(
                    update(runs)
                    .where(runs.c.run_id == source)
                    .values(completed_at=now() - timedelta(days=8))
                )
            assert await purge_expired(host.store, 7) == Purged(Erasure(0, 0, 0), deferred=1)
            assert await _held_content(host, source) == ["tool_calls", "events"]

            await set_status(evaluated, RunStatus.COMPLETED)
            assert await purge_expired(host.store, 7) == Purged(Erasure(2, 4, 1), deferred=0)
            assert await _held_content(host, evaluated) == []

    asyncio.run(scenario())
