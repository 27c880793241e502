"""A fence: what decides, inside the transaction that lands a step, whether it lands.

Most steps land whenever their run is in a state they allow. A step written by
a queue worker needs more: the worker must still own its job, an eval trial
must land at most once, and whatever its landing completes (the task's
`eval.scored`, the run's end) must land with it, exactly once. A fence is
asked after the run's row is locked and before anything is numbered, so its
answer cannot go stale and the log's sequences stay gapless whatever it says.

One transaction may land many fenced steps of a run (a worker's trials that
finished together): the row is locked once, and each fence sees the run as
the steps before it in the transaction left it (`Locked`), although their rows
are only written, in bulk, at the transaction's end.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable
from dataclasses import dataclass, field, replace
from typing import Protocol

from wopeval.engine.runlog.steps import RunUpdate, Step
from wopeval.store import LockedRun, TrialCounts, UnitOfWork
from wopeval.wire.runs import RunStatus


@dataclass(frozen=True)
class Landing:
    """A fence's yes: the step lands, followed by `extra`, and the run moves as said."""

    extra: Step = field(default_factory=Step)
    to: RunStatus | None = None
    """The run's new status (None: what the step's own transition says)."""
    update: RunUpdate = field(default_factory=RunUpdate)
    noop: bool = False
    """Nothing of the step lands, and it is no error: it is in the log already (a repeated
    trial), or the fence's own writes were the point (they commit with the transaction)."""


ALREADY_LANDED = Landing(noop=True)


@dataclass
class Locked:
    """A run under its row lock, as the fenced steps landed so far in this transaction
    leave it: its row moved in memory, and what those steps carried that is not yet
    written (their trials, the agents they invoked)."""

    run: LockedRun
    tasks: Collection[str] = ()
    """The tasks whose trials this transaction's steps carry (read together, once)."""
    trials: list[TrialCounts] = field(default_factory=list)
    invoked: set[str] = field(default_factory=set)
    verified: set[Hashable] = field(default_factory=set)
    """What fences checked under a lock held to the transaction's end (a job still owned):
    it stays true for the transaction's later steps."""
    _stored: dict[str, list[TrialCounts]] = field(default_factory=dict)
    _read: set[str] = field(default_factory=set)

    async def task_trials(self, uow: UnitOfWork, task_id: str) -> list[TrialCounts]:
        """The task's landed trials: stored ones and this transaction's."""
        if task_id not in self._read:
            unread = {*self.tasks, task_id} - self._read
            for counted in await uow.trials.counts_of(self.run.handle, unread):
                self._stored.setdefault(counted.task_id, []).append(counted)
            self._read |= unread
        pending = (counted for counted in self.trials if counted.task_id == task_id)
        return [*self._stored.get(task_id, []), *pending]

    async def all_trials(self, uow: UnitOfWork) -> list[TrialCounts]:
        """Every landed trial of the run: stored ones and this transaction's."""
        return [*await uow.trials.counts(self.run.handle), *self.trials]

    def moved(self, *, events: int, status: RunStatus | None, trials: list[TrialCounts]) -> None:
        """A step landed: `events` more sequences, maybe a new status, its trials."""
        self.run = replace(
            self.run,
            status=status or self.run.status,
            last_sequence=self.run.last_sequence + events,
            landed_trials=self.run.landed_trials + len(trials),
        )
        self.trials.extend(trials)


class Fence(Protocol):
    async def admit(self, uow: UnitOfWork, locked: Locked, step: Step) -> Landing | None:
        """With the run row locked: how `step` lands, or None to refuse it (nothing lands)."""
        ...
