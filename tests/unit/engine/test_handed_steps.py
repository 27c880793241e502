"""An eval worker's steps handed to the log writer (runlog.py `Handing`, log_writer.py
`LogWriter.hand`): each lands while the worker runs on, at most one in flight, and nothing
of the worker lands after one of its steps that did not."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from wopeval.engine.runlog import log_writer
from wopeval.engine.runlog.log_writer import LogWriter
from wopeval.engine.runlog.runlog import Handing, Journal, RunLog
from wopeval.engine.runlog.steps import RunClosed, StepNotLanded
from wopeval.store import Store
from wopeval.wire import events
from wopeval.wire.runs import RunStatus

from ._store import open_run, open_store, sequences, writer_for


@asynccontextmanager
async def _one_run(
    tmp_path: Path, status: RunStatus = RunStatus.RUNNING
) -> AsyncIterator[tuple[Store, LogWriter, RunLog]]:
    """A SQLite store, its log writer and one run of it (`run.started` at 0)."""
    async with open_store(tmp_path) as store:
        writer = writer_for(store)
        yield store, writer, await open_run(writer, status)


def _hand(handing: Handing, log: RunLog, node_id: str) -> None:
    """Hand `handing` a step of one `node.started` of `node_id`."""
    handing.hand(_journal(log, handing, node_id))


def _journal(log: Any, behind: Handing, node_id: str) -> Journal:
    journal = Journal(log, behind)
    journal.emit(events.NodeStarted(nodeId=node_id, nodeType="core.noop"), node_id=node_id)
    return journal


def _lose_every_write(writer: LogWriter, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every transaction of `writer` with a step of a node named "lost" fails as a
    connection lost under it does; the rest land."""
    real = writer._write_once

    async def lost(batch: Any) -> list[bool]:
        if any(staged.node_id == "lost" for queued in batch for staged in queued.step.staged):
            raise OperationalError("COMMIT", None, ConnectionError("server closed the connection"))
        return await real(batch)

    monkeypatch.setattr(writer, "_write_once", lost)
    monkeypatch.setattr(writer, "_landed_unanswered", lambda queued: _false())


async def _false() -> bool:
    return False


async def test_a_handed_step_is_taken_then_lands(tmp_path: Path) -> None:
    async with _one_run(tmp_path) as (store, _writer, log):
        handing = Handing()
        _hand(handing, log, "n")
        await handing.taken()
        await handing.landed()
        assert [seq for seq, _ in await sequences(store, log.run_id)] == [0, 1]
        # Nothing in flight any more: the next goes over.
        _hand(handing, log, "m")
        await handing.landed()
        assert [seq for seq, _ in await sequences(store, log.run_id)] == [0, 1, 2]


async def test_a_second_step_is_not_handed_while_one_is_in_flight(tmp_path: Path) -> None:
    async with _one_run(tmp_path) as (_store, _writer, log):
        handing = Handing()
        _hand(handing, log, "n")
        with pytest.raises(RuntimeError, match="in flight"):
            _hand(handing, log, "m")
        await handing.landed()


async def test_a_handed_step_of_an_ended_run_is_refused_as_a_commit_is(tmp_path: Path) -> None:
    async with _one_run(tmp_path, RunStatus.COMPLETED) as (store, _writer, log):
        handing = Handing()
        _hand(handing, log, "n")
        with pytest.raises(RunClosed):
            await handing.landed()
        assert [seq for seq, _ in await sequences(store, log.run_id)] == [0]


async def test_a_waiter_cut_while_its_step_lands_leaves_it_for_the_next(tmp_path: Path) -> None:
    """A pause cuts a unit waiting for the step before its own; the unit that runs again
    waits for the same step, which landed meanwhile."""
    async with _one_run(tmp_path) as (store, _writer, log):
        handing = Handing()
        _hand(handing, log, "n")
        cut = asyncio.ensure_future(handing.landed())
        await asyncio.sleep(0)
        cut.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cut
        await handing.landed()
        assert [seq for seq, _ in await sequences(store, log.run_id)] == [0, 1]


async def test_a_unit_behind_a_lost_step_is_lost_and_lands_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live call's flush in the next trial waits for the step before it: that one lost,
    the flush raises, its call does not run, and the unit is lost."""
    async with _one_run(tmp_path) as (store, writer, log):
        handing = Handing()
        with monkeypatch.context() as patch:
            _lose_every_write(writer, patch)
            _hand(handing, log, "lost")
            await handing.taken()
            behind = _journal(log, handing, "behind")
            with pytest.raises(StepNotLanded):
                await behind.flush()
        assert behind.lost
        with pytest.raises(StepNotLanded):
            await behind.flush()
        await writer.stop()
        assert [seq for seq, _ in await sequences(store, log.run_id)] == [0]


async def test_the_flusher_cancelled_lets_a_queued_steps_waiters_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step queued behind the transaction being written when the flusher is cancelled
    (the host stopping) was never taken: its worker, waiting for the take, is let go. The
    step being written was taken when its transaction began."""
    async with open_store(tmp_path) as store:
        writer = writer_for(store)
        log, other = await open_run(writer), await open_run(writer)
        writing = asyncio.Event()

        async def stuck(batch: Any) -> list[bool]:
            writing.set()
            await asyncio.Event().wait()
            raise AssertionError("never reached")

        monkeypatch.setattr(writer, "_write_once", stuck)
        first, second = Handing(), Handing()
        _hand(first, log, "n")
        # Taken as its transaction is written, not once it landed.
        await asyncio.wait_for(first.taken(), timeout=10)
        assert writing.is_set()
        _hand(second, other, "m")
        flusher = writer._flusher
        assert flusher is not None
        flusher.cancel()
        await asyncio.wait_for(second.taken(), timeout=10)
        for handing in (first, second):
            with pytest.raises(asyncio.CancelledError):
                await handing.landed()


async def test_an_abandoned_lost_step_is_not_reported_unasked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker that fails (or is cancelled) with a step in flight abandons it: it still
    lands or not, and its loss is not logged as a future's exception never retrieved."""
    reported: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    async with _one_run(tmp_path) as (_store, writer, log):
        handing = Handing()
        with monkeypatch.context() as patch:
            _lose_every_write(writer, patch)
            # The loss's log records (kept by pytest) would keep the step's future alive.
            patch.setattr(log_writer, "log", logging.getLogger("unit.handed.unlogged"))
            patch.setattr(log_writer.log, "disabled", True)
            _hand(handing, log, "lost")
            handing.abandon()
            await writer.stop()
        gc.collect()
        await asyncio.sleep(0)
    loop.set_exception_handler(None)
    assert reported == []
