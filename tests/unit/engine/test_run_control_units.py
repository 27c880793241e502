"""`RunControl.unit`: a unit runs in its caller's task; an immediate pause cuts it and it runs
again, whole, after the resume; a cancel that is not the cut's still cancels the caller."""

from __future__ import annotations

import asyncio

import pytest

from wopeval.engine.runs.control import RunControl


class _Unit:
    """A unit that counts its starts and waits on `release` (a fresh one each start)."""

    def __init__(self) -> None:
        self.starts = 0
        self.tasks: list[asyncio.Task[object] | None] = []
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def __call__(self) -> str:
        self.starts += 1
        self.tasks.append(asyncio.current_task())
        self.entered.set()
        await self.release.wait()
        return f"done after {self.starts} starts"


async def _entered(unit: _Unit) -> None:
    await asyncio.wait_for(unit.entered.wait(), 5)
    unit.entered.clear()


async def test_a_unit_runs_in_its_caller_s_task() -> None:
    control, unit = RunControl(), _Unit()
    unit.release.set()
    caller = asyncio.ensure_future(control.unit(unit))
    assert await caller == "done after 1 starts"
    assert unit.tasks == [caller]


async def test_a_cut_unit_runs_again_whole_after_the_resume() -> None:
    control, unit = RunControl(), _Unit()
    caller = asyncio.ensure_future(control.unit(unit))
    await _entered(unit)
    control.pause(immediate=True)
    # Cut twice before the cut lands: still one cut, taken back once.
    control.pause(immediate=True)
    await asyncio.sleep(0.01)
    assert not caller.done()
    assert unit.starts == 1
    control.resume()
    await _entered(unit)
    unit.release.set()
    assert await caller == "done after 2 starts"
    assert caller.cancelling() == 0


async def test_a_cancel_besides_the_cut_cancels_the_caller() -> None:
    control, unit = RunControl(), _Unit()
    caller = asyncio.ensure_future(control.unit(unit))
    await _entered(unit)
    control.pause(immediate=True)
    caller.cancel()
    control.resume()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(caller, 5)
    assert unit.starts == 1


async def test_a_pause_that_drains_lets_the_unit_finish() -> None:
    control, unit = RunControl(), _Unit()
    caller = asyncio.ensure_future(control.unit(unit))
    await _entered(unit)
    control.pause(immediate=False)
    unit.release.set()
    assert await caller == "done after 1 starts"


async def test_a_unit_past_its_landing_finishes_under_an_immediate_pause() -> None:
    control, unit = RunControl(), _Unit()

    async def landing_unit() -> str:
        control.landing()
        return await unit()

    caller = asyncio.ensure_future(control.unit(landing_unit))
    await _entered(unit)
    control.pause(immediate=True)
    await asyncio.sleep(0.01)
    unit.release.set()
    assert await asyncio.wait_for(caller, 5) == "done after 1 starts"
    assert not caller.cancelling()
