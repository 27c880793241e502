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

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from wopeval import evals
from wopeval.store import (
    InvocationRow,
    ListingRow,
    ModelCallRow,
    ToolCallOutcome,
    ToolCallRow,
    TrialRow,
    idle_column,
)
from wopeval.wire import events, ids
from wopeval.wire.json_text import JsonObject
from wopeval.wire.runs import IdleAgent, RunStatus
from wopeval.wire.summary import EvalSummary

if TYPE_CHECKING:
    from wopeval.engine.fence import Fence
    from wopeval.engine.log_writer import LogWriter

ACTIVE = frozenset({RunStatus.RUNNING, RunStatus.PAUSED, RunStatus.CANCELLING})
"""States in which a run's steps land: a paused run drains its executing unit, a
cancelling one lands what was in flight."""

RUNNING = frozenset({RunStatus.RUNNING})
"""The state a body's own ending lands from: a paused run waits for its resume."""

STOPPED_HOST = frozenset({RunStatus.RUNNING, RunStatus.PAUSED})
"""The states a host that is stopping (or recovering) may end a run from."""


def now() -> datetime:
    return datetime.now(UTC)


def timestamp(at: datetime) -> str:
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def epoch_timestamp(epoch_ms: int) -> str:
    """`timestamp` of the UTC time `epoch_ms` milliseconds after the epoch (printf-style
    formatting of `gmtime`'s fields: a fifth of building a datetime and its isoformat)."""
    fields = time.gmtime(epoch_ms // 1000)
    return "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (  # noqa: UP031
        fields.tm_year,
        fields.tm_mon,
        fields.tm_mday,
        fields.tm_hour,
        fields.tm_min,
        fields.tm_sec,
        epoch_ms % 1000,
    )


class _EventClock:
    """An event's `timestamp` as it is emitted. A step's events are emitted microseconds
    apart, so most share their millisecond's text with the one before: that is kept, and
    an event pays a clock read instead of building a datetime and formatting it."""

    def __init__(self) -> None:
        self._last: tuple[int, str] = (-1, "")

    def now(self) -> str:
        epoch_ms = time.time_ns() // 1_000_000
        last = self._last
        if last[0] == epoch_ms:
            return last[1]
        text = epoch_timestamp(epoch_ms)
        # One tuple, replaced whole: a reader on another thread sees an old pair or the new.
        self._last = (epoch_ms, text)
        return text


event_time = _EventClock().now


class RunClosed(Exception):
    """The run has ended: nothing more lands in its log."""


@dataclass(slots=True)
class Staged:
    """An event on its way to the log; `sequence` is set when its step lands."""

    type: str
    payload: dict[str, Any]
    timestamp: str
    node_id: str | None
    event_id: str = field(default_factory=ids.mint_local_id)
    sequence: int | None = None


@dataclass
class Step:
    """What lands together: events, the tool records keyed to them, outcomes of earlier
    calls, model exchanges, the invocations and eval trials that ended, and the MCP
    listings the run was offered for the first time."""

    staged: list[Staged] = field(default_factory=list)
    calls: list[tuple[Staged, ToolCallRow]] = field(default_factory=list)
    outcomes: list[tuple[Staged, ToolCallOutcome]] = field(default_factory=list)
    model_calls: list[ModelCallRow] = field(default_factory=list)
    invocations: list[InvocationRow] = field(default_factory=list)
    trials: list[TrialRow] = field(default_factory=list)
    listings: list[ListingRow] = field(default_factory=list)

    def emit(self, payload: events.Payload, *, node_id: str | None = None) -> Staged:
        staged = Staged(payload.TYPE, payload.to_wire(), event_time(), node_id)
        self.staged.append(staged)
        return staged

    def record_call(self, called: Staged, row: ToolCallRow) -> None:
        """Record a tool call under its `agent.tool-called` event, staged in this step."""
        self.calls.append((called, row))

    def complete_call(self, called: Staged, outcome: ToolCallOutcome) -> None:
        """Give a call recorded in a step that already landed its outcome."""
        if called.sequence is None:
            raise ValueError("the call's agent.tool-called has not landed yet")
        self.outcomes.append((called, outcome))

    def agent_ids(self) -> set[str]:
        """The agents whose invocations ended in this step."""
        return {invocation.agent_id for invocation in self.invocations}

    def extend(self, other: Step) -> None:
        self.staged.extend(other.staged)
        self.calls.extend(other.calls)
        self.outcomes.extend(other.outcomes)
        self.model_calls.extend(other.model_calls)
        self.invocations.extend(other.invocations)
        self.trials.extend(other.trials)
        self.listings.extend(other.listings)


@dataclass(frozen=True, slots=True)
class RunUpdate:
    """Run-row columns a step sets besides its sequences and status."""

    completed_at: datetime | None = None
    outputs: JsonObject | None = None
    summary: EvalSummary | None = None
    error: events.RunErrorInfo | None = None
    agent_ids: list[str] | None = None
    cancel_reason: str | None = None
    idle: list[IdleAgent] | None = None

    def values(self) -> dict[str, Any]:
        columns = {
            "completed_at": self.completed_at,
            "outputs": self.outputs,
            "summary": None if self.summary is None else self.summary.to_wire(),
            "error": None if self.error is None else self.error.to_wire(),
            "agent_ids": self.agent_ids,
            "cancel_reason": self.cancel_reason,
            "idle": idle_column(self.idle),
        }
        return {name: value for name, value in columns.items() if value is not None}


@dataclass(frozen=True, slots=True)
class Transition:
    """The states a step may land in, and the state it leaves the run in (None: unchanged)."""

    allowed_from: frozenset[RunStatus] = ACTIVE
    to: RunStatus | None = None


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
        if not await self.transition(Transition(), step, update):
            raise RunClosed(f"run {self.run_id} has ended")

    async def transition(
        self, transition: Transition, step: Step | None = None, update: RunUpdate | None = None
    ) -> bool:
        """Land `step` and move the run as `transition` says, if the run is in a state it
        allows; False (and nothing written) otherwise."""
        return await self._writer.submit(
            self.run_id, self.tenant, step or Step(), transition, update or RunUpdate(), self.fence
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


class Journal:
    """One unit of work's events (a workflow node, an eval trial) on their way to the log.

    A unit commits once, at its end, unless it makes a live tool call: then
    `flush()` lands what is staged so far, so the call's `agent.tool-called`
    is durable before the tool runs and its outcome before the agent sees it.
    """

    def __init__(self, log: RunLog) -> None:
        self.log = log
        self._step = Step()

    def emit(self, payload: events.Payload, *, node_id: str | None = None) -> Staged:
        return self._step.emit(payload, node_id=node_id)

    def record_call(self, called: Staged, row: ToolCallRow) -> None:
        self._step.record_call(called, row)

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
        step, self._step = self._step, Step()
        await self.log.commit(step)

    def take(self) -> Step:
        """What is staged and not landed yet, for the caller to land with its own step."""
        step, self._step = self._step, Step()
        return step
