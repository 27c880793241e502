"""A worker's view of the runs it executes: paused, resumed, ended elsewhere.

Commands reach a run through its row (engine/runs/commands.py), written by any API
process. Every `watch_seconds` this reads the status of the runs that have a
job here and steers their `RunControl` as the in-process engine does: a pause
stops new trials or nodes (`immediate` cuts the running ones, which start
afresh after the resume), and a run that ended (cancelled, failed) has its jobs
here cancelled. Procrastinate's abort of a cancelled run's jobs does the same
sooner; this is what holds when that notification is missed.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from wopeval.engine.runs.control import RunControl
from wopeval.store import RunHandle, Store
from wopeval.wire.runs import RunStatus

log = logging.getLogger("wopeval.worker")


@dataclass
class _Followed:
    run: RunHandle
    control: RunControl = field(default_factory=RunControl)
    jobs: set[asyncio.Task[Any]] = field(default_factory=set)


class RunWatch:
    def __init__(self, store: Store, interval: float) -> None:
        self._store = store
        self._interval = interval
        self._followed: dict[str, _Followed] = {}

    @contextmanager
    def follow(self, run: RunHandle, status: RunStatus) -> Iterator[RunControl]:
        """The control the current job's units run under, while the job runs; `status` is the
        run's as the job read it, so a job that starts paused waits from its first unit."""
        run_id = run.run_id
        followed = self._followed.get(run_id)
        if followed is None:
            followed = self._followed[run_id] = _Followed(run)
            if status is RunStatus.PAUSED:
                followed.control.pause(immediate=False)
        task = asyncio.current_task()
        if task is not None:
            followed.jobs.add(task)
        try:
            yield followed.control
        finally:
            if task is not None:
                followed.jobs.discard(task)
            if not followed.jobs and self._followed.get(run_id) is followed:
                del self._followed[run_id]

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            try:
                await self.check()
            except Exception:
                log.exception("reading the state of this worker's runs failed; retrying")

    async def check(self) -> None:
        if not self._followed:
            return
        followed_now = dict(self._followed)
        async with self._store.reading() as uow:
            statuses = await uow.runs.statuses(list(followed_now))
            policies = {
                run_id: _drain_policy(
                    await uow.events.docs_of_types(followed_now[run_id].run, ["run.paused"])
                )
                for run_id, status in statuses.items()
                if status is RunStatus.PAUSED and not followed_now[run_id].control.paused
            }
        for run_id, status in statuses.items():
            followed = self._followed.get(run_id)
            if followed is None:
                continue
            control = followed.control
            if status.is_terminal:
                control.stop()
                for job in followed.jobs:
                    job.cancel()
            elif status is RunStatus.PAUSED and not control.paused:
                control.pause(immediate=policies.get(run_id) == "immediate")
            elif status is RunStatus.RUNNING and control.paused:
                control.resume()


def _drain_policy(found: dict[int, str]) -> str | None:
    """The drain policy of the run's latest `run.paused` (its stored docs by sequence)."""
    if not found:
        return None
    payload = json.loads(found[max(found)])["payload"]
    policy = payload.get("drainPolicy")
    return str(policy) if policy is not None else None
