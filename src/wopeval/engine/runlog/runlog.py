"""A run's handle on its log (G7): steps, the state they may land in, and how a run ends.

Work reaches a run's log as a `Step`: events, the tool records they carry and
the outcomes of live calls recorded earlier. A step lands whole or not at all,
through the engine's one `LogWriter` (log_writer.py), which numbers its events
at commit from the run row, so sequences stay contiguous whoever writes.

Every step names the run states it may land in (a `Transition`), so the run
row decides, atomically, what happens when two things race: a step for a run
that has ended is refused (`RunClosed`); a run whose cancel was accepted first
(`cancelling`) ends `cancelled` whatever its body produced; a paused run does
not end until it is resumed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from wopeval import evals
from wopeval.engine.runlog.fence import Fence
from wopeval.engine.runlog.log_writer import Handed, LogWriter
from wopeval.engine.runlog.steps import (
    NO_UPDATE,
    RUNNING,
    WHILE_ACTIVE,
    Emit,
    RunClosed,
    RunUpdate,
    Staged,
    Step,
    StepNotLanded,
    Transition,
)
from wopeval.store import (
    InvocationRow,
    ListingRow,
    ModelCallRow,
    ToolCallOutcome,
    ToolCallRow,
    TrialRow,
)
from wopeval.wire import events
from wopeval.wire.runs import RunStatus


class RunLog:
    """One run's handle on the log; cheap to make, so any caller can hold one.

    With a `fence`, every step this handle lands is admitted by it first (fence.py).
    """

    def __init__(
        self, writer: LogWriter, run_id: str, tenant: str, fence: Fence | None = None
    ) -> None:
        self._writer = writer
        self.run_id = run_id
        self.tenant = tenant
        self.fence = fence
        self.offered_listings: set[tuple[str, str]] = set()
        """`(server, digest)` of the MCP listings recorded through this handle: each lands
        once (the store keeps the first of a run's server anyway)."""

    async def commit(self, step: Step, update: RunUpdate | None = None) -> None:
        """Land `step` while the run is active; raises RunClosed once it has ended."""
        if not await self.transition(WHILE_ACTIVE, step, update):
            raise RunClosed(f"run {self.run_id} has ended")

    @property
    def overlaps(self) -> bool:
        """Whether a step handed over (`hand`) lands while its caller runs on: PostgreSQL's
        transaction is on the server then. SQLite's is written on the loop, and a caller
        that went on would gain nothing and pay the hand-over's wake-ups."""
        return self._writer.store.pipelines

    def hand(self, step: Step) -> Handed:
        """Hand `step` over to land while the run is active, without waiting (`Handing`)."""
        return self._writer.hand(self.run_id, self.tenant, step, self.fence)

    async def transition(
        self, transition: Transition, step: Step | None = None, update: RunUpdate | None = None
    ) -> bool:
        """Land `step` and move the run as `transition` says, if the run is in a state it
        allows; False (and nothing written) otherwise."""
        return await self._writer.submit(
            self.run_id, self.tenant, step or Step(), transition, update or NO_UPDATE, self.fence
        )

    async def close(
        self,
        status: RunStatus,
        step: Step,
        update: RunUpdate,
        *,
        allowed_from: frozenset[RunStatus] = RUNNING,
    ) -> RunStatus | None:
        """End the run with `step` (its last event the terminal one) from `allowed_from`.

        Returns the status the run ended with: a run whose cancel was accepted
        first ends `cancelled` with the cancel's reason, whatever `status` says.
        None means the run is paused and has not ended; it ends after its resume.
        """
        if status is not RunStatus.CANCELLED and await self.transition(
            Transition(allowed_from, status), step, update
        ):
            return status
        record = await self._writer.read(self.tenant, self.run_id)
        if record is None or record.status.is_terminal:
            raise RunClosed(f"run {self.run_id} has ended")
        cancelling = frozenset({RunStatus.CANCELLING})
        if status is RunStatus.CANCELLED:
            cancelling |= allowed_from
        elif record.status not in cancelling:
            if self.fence is not None and record.status in allowed_from:
                # The run's state allowed this ending, so its fence refused it (a queue
                # worker that no longer owns its job): the run is not this caller's to end.
                raise RunClosed(f"run {self.run_id} is no longer this caller's to end")
            # Paused since: the run ends after its resume (or its cancel).
            return None
        ending = Step()
        ending.emit(events.RunCancelled(reason=record.cancel_reason))
        cancelled = RunUpdate(completed_at=update.completed_at, agent_ids=update.agent_ids)
        if await self.transition(Transition(cancelling, RunStatus.CANCELLED), ending, cancelled):
            return RunStatus.CANCELLED
        # Neither ending landed: the run changed state in between; look again.
        return await self.close(status, step, update, allowed_from=allowed_from)


class Handing:
    """One eval worker's trials, each landing while the worker runs its next one: the
    32 workers of a busy eval finish a trial each and join one group transaction, and on
    PostgreSQL that transaction is on the server for ~7 ms, during which they had nothing
    to do (bench/README.md, "Branch `eval-pg-overlap`").

    At most one step is in flight: the next is handed over (or a live call's flush sent,
    `Journal`'s `behind`) only once it landed, so a worker's steps land in their order, and
    nothing of a worker lands after a step of it that did not. A trial's step is durable
    before anything reports it: its task's `eval.scored` rides in its last trial's step,
    and the run ends only after every worker waited for its last (`landed`)."""

    def __init__(self) -> None:
        self._in_flight: Handed | None = None

    def hand(self, journal: Journal) -> None:
        """Hand `journal`'s step over (`landed` first: nothing may be in flight)."""
        if self._in_flight is not None:
            raise RuntimeError("a step handed over while the one before is in flight")
        self._in_flight = journal.log.hand(journal.take())

    async def taken(self) -> None:
        """Wait until the writer took the step in flight into a transaction."""
        if self._in_flight is not None:
            await self._in_flight.taken

    async def landed(self) -> None:
        """Wait until the step in flight, if any, is durable; `StepNotLanded` when it was
        lost, `RunClosed` when refused. A waiter cut here (a pause, a cancel) leaves the
        step in flight as it is, for the next to wait on."""
        handed = self._in_flight
        if handed is None:
            return
        done = handed.done
        # Shielded: a cut here must not cancel the writer's answer, which the unit that
        # runs again waits on.
        landed = done.result() if done.done() else await asyncio.shield(done)
        self._in_flight = None
        if not landed:
            raise RunClosed("the run has ended")

    def abandon(self) -> None:
        """The worker ends without waiting (it failed, or was cancelled): the step in
        flight still lands, and its failure, if it has one, is not reported unasked."""
        handed, self._in_flight = self._in_flight, None
        if handed is not None:
            handed.done.add_done_callback(_retrieved)


def _retrieved(done: asyncio.Future[bool]) -> None:
    if not done.cancelled():
        done.exception()


class Journal:
    """One unit of work's events (a workflow node, an eval trial) on their way to the log.

    A unit commits once, at its end, unless it makes a live tool call: then
    `flush()` lands what is staged so far, so the call's `agent.tool-called`
    is durable before the tool runs and its outcome before the agent sees it.

    A flush that did not land (`StepNotLanded`) lost what it carried, so the unit can
    never land whole: every later `flush()` and `take()` raises `StepNotLanded` too. Its
    run ends failed whoever caught the first (an outside agent's MCP call answered with
    an error, an agent's code that swallows the exception), and no later live call runs.
    """

    emit: Emit
    """`Step.emit` of the step being staged."""
    record_call: Callable[[Staged, ToolCallRow], None]
    """`Step.record_call` of the step being staged."""

    def __init__(self, log: RunLog, behind: Handing | None = None) -> None:
        self.log = log
        self._stage(Step())
        self._lost = False
        self._behind = behind
        """The worker's step in flight, which must land before anything of this unit."""

    def _stage(self, step: Step) -> None:
        """Stage what comes next in `step`. Its `emit` and `record_call` are bound here, once
        a step, not called through a method of the journal's on every event and record
        (three a tool call)."""
        self._step = step
        self.emit = step.emit
        self.record_call = step.record_call

    def complete_call(self, called: Staged, outcome: ToolCallOutcome) -> None:
        self._step.complete_call(called, outcome)

    def record_model_call(self, row: ModelCallRow) -> None:
        self._step.model_calls.append(row)

    def record_invocation(self, row: InvocationRow) -> None:
        self._step.invocations.append(row)

    def record_trial(self, row: TrialRow) -> None:
        self._step.trials.append(row)

    def record_listings(self, listings: Sequence[evals.ServerListing]) -> None:
        """Keep with the run the MCP servers' listings an invocation was offered."""
        kept = self.log.offered_listings
        for listing in listings:
            if (listing.server, listing.digest) not in kept:
                kept.add((listing.server, listing.digest))
                self._step.listings.append(
                    ListingRow(listing.server, listing.digest, listing.document())
                )

    async def flush(self) -> None:
        """Land everything staged so far; returns once it is durable."""
        self._whole()
        try:
            if self._behind is not None:
                await self._behind.landed()
            step = self._step
            self._stage(Step())
            await self.log.commit(step)
        except StepNotLanded:
            self._lost = True
            raise

    def take(self) -> Step:
        """What is staged and not landed yet, for the caller to land with its own step."""
        self._whole()
        step = self._step
        self._stage(Step())
        return step

    @property
    def lost(self) -> bool:
        """Whether a step of this unit did not land: nothing more of it does."""
        return self._lost

    def _whole(self) -> None:
        if self._lost:
            raise StepNotLanded("an earlier step of this unit did not land; nothing more does")
