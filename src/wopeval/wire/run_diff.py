"""`diffRun`'s answer: `schemas/v2/run-diff-response.schema.json` (runs.md §Diff and ancestry).

The object is closed: `a`, `b`, `eventDiffs` and `stateDiff` are required,
`divergedAtSeq` is an integer or `null`, `truncated` is optional. Each
`eventDiffs[]` entry is closed too: `seq` and `op` required, `aEvent` absent
when `op` is `added`, `bEvent` absent when it is `removed`. `stateDiff` is an
open object; what this host puts there is in docs/decisions.md.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from wopeval.wire._event_base import AnyJson

DiffOp = Literal["added", "removed", "changed"]
"""The schema's `op`: `added` present in `b` only, `removed` in `a` only, `changed` in both
but different under the comparison rule."""


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EventDiff(_Closed):
    """One `eventDiffs[]` entry: the two logs at one sequence."""

    seq: int = Field(ge=0)
    """The event sequence this entry is about."""
    op: DiffOp
    """How the two logs differ there."""
    aEvent: dict[str, AnyJson] | None = None
    """The `{runId}` run's event at `seq`, as stored; absent for `added`."""
    bEvent: dict[str, AnyJson] | None = None
    """The `against` run's event at `seq`, as stored; absent for `removed`."""

    def to_wire(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"seq": self.seq, "op": self.op}
        if self.aEvent is not None:
            entry["aEvent"] = self.aEvent
        if self.bEvent is not None:
            entry["bEvent"] = self.bEvent
        return entry


class StateChange(_Closed):
    """One member of `stateDiff`: a state field the two logs fold to differently.

    No state field is ever `null`, so `None` here means the side has no such field
    (a run that failed has no `outputs`), and that side's key is left out.
    """

    a: AnyJson | None = None
    """The field in the `{runId}` run's state; absent when that state lacks it."""
    b: AnyJson | None = None
    """The field in the `against` run's state; absent when that state lacks it."""

    def to_wire(self) -> dict[str, Any]:
        change: dict[str, Any] = {}
        if self.a is not None:
            change["a"] = self.a
        if self.b is not None:
            change["b"] = self.b
        return change


class RunDiff(_Closed):
    """`GET /runs/{runId}:diff?against=`: where two runs' logs and end states differ."""

    a: str
    """The `{runId}` run (the path resource)."""
    b: str
    """The `against` run (the query parameter)."""
    divergedAtSeq: int | None = Field(ge=0)
    """The first sequence at which the compared logs differ; `null` when they do not."""
    eventDiffs: list[EventDiff]
    """Every differing sequence of the compared range, in order; empty for identical logs."""
    stateDiff: dict[str, StateChange]
    """The state fields (`status`, `outputs`, `error`) the two logs fold to differently."""
    truncated: bool | None = None
    """`true` when only a prefix of either log was compared (an active run, or a bound)."""

    def to_wire(self) -> dict[str, Any]:
        # `divergedAtSeq: null` is the answer for identical logs, so it is always sent.
        body: dict[str, Any] = {
            "a": self.a,
            "b": self.b,
            "divergedAtSeq": self.divergedAtSeq,
            "eventDiffs": [entry.to_wire() for entry in self.eventDiffs],
            "stateDiff": {name: change.to_wire() for name, change in self.stateDiff.items()},
        }
        if self.truncated:
            body["truncated"] = True
        return body
