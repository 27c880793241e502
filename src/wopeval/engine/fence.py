"""A fence: what decides, inside the transaction that lands a step, whether it lands.

Most steps land whenever their run is in a state they allow. A step written by
a queue worker needs more: the worker must still own its job, an eval trial
must land at most once, and whatever its landing completes (the task's
`eval.scored`, the run's end) must land with it, exactly once. A fence is
asked after the run's row is locked and before anything is numbered, so its
answer cannot go stale and the log's sequences stay gapless whatever it says.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from wopeval.engine.runlog import RunUpdate, Step
from wopeval.store import LockedRun, UnitOfWork
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


class Fence(Protocol):
    async def admit(self, uow: UnitOfWork, run: LockedRun, step: Step) -> Landing | None:
        """With the run row locked: how `step` lands, or None to refuse it (nothing lands)."""
        ...
