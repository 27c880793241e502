"""The pieces a run's log is written in: a `Step` of staged events and records, the run-row
`Transition` it may land in, the `RunUpdate` it sets, and the host's clock (runlog.py).

Kept apart from `RunLog` so the writer and the fences that take steps need not import the
handle that hands steps to them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from wopeval.store import (
    InvocationRow,
    ListingRow,
    ModelCallRow,
    ToolCallOutcome,
    ToolCallRow,
    TrialRow,
    idle_column,
    out_of_reach,
)
from wopeval.wire import events, ids
from wopeval.wire.json_text import JsonObject
from wopeval.wire.runs import IdleAgent, RunStatus
from wopeval.wire.summary import EvalSummary

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


class StepNotLanded(Exception):
    """A step that could not land, alone, on a new connection: the database was out of
    reach (a restart, a failover; store `out_of_reach`). Its caller goes no further (a
    live call's tool does not run, its agent does not see its result) and its run ends
    failed (`STORE_UNREACHABLE`); the store's own message (its host, its database) stays in
    the host's log."""


STORE_UNREACHABLE = "store_unreachable"


def store_unreachable(error: BaseException) -> bool:
    """Whether `error` says the database was out of reach: a statement of the caller's own
    failed so (store `out_of_reach`), or a step it handed the log writer did
    (`StepNotLanded`). Not the caller's bug: a request answers `503 service_unavailable`."""
    return isinstance(error, StepNotLanded) or out_of_reach(error)


@dataclass(slots=True)
class Staged:
    """An event on its way to the log; `sequence` is set when its step lands."""

    type: str
    payload: dict[str, Any]
    timestamp: str
    node_id: str | None
    event_id: str = field(default_factory=ids.mint_local_id)
    sequence: int | None = None


class Emit(Protocol):
    """`Step.emit`'s signature, for a step's bound `emit` handed on (`Journal.emit`)."""

    def __call__(
        self, payload: events.Payload | events.Built, *, node_id: str | None = None
    ) -> Staged: ...


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

    def emit(self, payload: events.Payload | events.Built, *, node_id: str | None = None) -> Staged:
        # A `Built`'s wire is its field: read, not asked of it (two events a tool call).
        wire = payload.wire if type(payload) is events.Built else payload.to_wire()
        staged = Staged(payload.TYPE, wire, event_time(), node_id)
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


NO_UPDATE = RunUpdate()
"""A step that sets no run-row column (frozen, so one serves every such step)."""

WHILE_ACTIVE = Transition()
"""Land while the run is active and leave its state as it is (`RunLog.commit`'s)."""
