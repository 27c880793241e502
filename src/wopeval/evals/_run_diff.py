"""RFC 0054 `diffRun` (runs.md §Diff and ancestry): two event logs in, the diff out.

The diff is positional, as `run-diff-response.schema.json` defines its
entries: at each sequence both logs hold an event (`changed` when they differ),
only `b` does (`added`) or only `a` does (`removed`). Events compare as RFC 8785
canonical JSON (`_canonical.json_equal`) after the run-scoped fields are taken
out (`_Comparable`), so a replay and its source differ where their trajectories
do, not at every id and clock. The same fields are left out of the end states
that `stateDiff` compares. Nothing here reads a store or a clock: the caller
hands in what it read of each log and whether that is the whole log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from wopeval.evals._canonical import json_equal
from wopeval.wire import events, limits
from wopeval.wire.json_text import JsonObject
from wopeval.wire.run_diff import EventDiff, RunDiff, StateChange
from wopeval.wire.runs import RunStatus

Event = Mapping[str, Any]
"""One RunEventDoc, as stored."""

ENVELOPE_EXCLUDED = frozenset({"eventId", "runId", "timestamp", "causationId", "correlationId"})
"""Envelope fields never compared: the run's own identity, its clock, and references to its
own event ids. `sequence` is the position the two events share."""

MINTED_IDS: Mapping[str, tuple[str, ...]] = {
    events.InvocationStarted.TYPE: ("invocationId",),
    events.InvocationCompleted.TYPE: ("invocationId",),
    events.ToolCalled.TYPE: ("callId",),
    events.ToolReturned.TYPE: ("callId",),
}
"""Payload ids the host mints afresh in every run. Each compares as the order of its first
appearance in its own log, so a call still has to be answered under the id it was made with."""

WALL_CLOCK: Mapping[str, tuple[str, ...]] = {
    events.ToolReturned.TYPE: ("durationMs",),
    events.EvalScored.TYPE: ("latencyMs",),
}
"""Payload fields that measure this run's wall time, never compared (nor, in an eval run's
summary, each task's `latencyMs`)."""

STATE_FIELDS = ("status", "outputs", "error")
"""What `stateDiff` compares: the status a log folds to, and its terminal outputs or error."""

_STATUS_AFTER: Mapping[str, RunStatus] = {
    events.RunStarted.TYPE: RunStatus.RUNNING,
    events.RunPaused.TYPE: RunStatus.PAUSED,
    events.RunResumed.TYPE: RunStatus.RUNNING,
    events.RunCompleted.TYPE: RunStatus.COMPLETED,
    events.RunFailed.TYPE: RunStatus.FAILED,
    events.RunCancelled.TYPE: RunStatus.CANCELLED,
}


@dataclass(frozen=True, slots=True)
class LoggedRun:
    """What was read of one run's log."""

    run_id: str
    """The bound run id."""
    events: Sequence[Event]
    """Its events in sequence order, from sequence 0, as stored."""
    complete: bool
    """The run has ended and `events` is its whole log; otherwise `events` is a prefix (the
    run is still active, or its log is longer than the host reads)."""


def diff_logs(
    a: LoggedRun, b: LoggedRun, *, max_event_diffs: int = limits.RUN_DIFF_MAX_EVENT_DIFFS
) -> RunDiff:
    """runs.md §Diff and ancestry: the diff of `a`'s log against `b`'s.

    "The diff MUST be a pure function of the two logs": it reads nothing but
    `a` and `b`.

    At most `max_event_diffs` entries are listed; a further difference makes
    the answer `truncated`.
    """
    left, right = _Comparable(), _Comparable()
    seen_a = [left(event) for event in a.events]
    seen_b = [right(event) for event in b.events]
    end = _settled_end(a, b)
    entries: list[EventDiff] = []
    cut_short = False
    for seq in range(end):
        entry = _entry(seq, a.events, b.events, seen_a, seen_b)
        if entry is None:
            continue
        if len(entries) == max_event_diffs:
            cut_short = True
            break
        entries.append(entry)
    return RunDiff(
        a=a.run_id,
        b=b.run_id,
        # "Identical logs MUST yield `divergedAtSeq: null` and empty `eventDiffs`."
        divergedAtSeq=entries[0].seq if entries else None,
        eventDiffs=entries,
        stateDiff=_state_diff(a.events, b.events, seen_a, seen_b),
        # "A host that diffs an in-flight prefix MUST set `truncated: true`."
        truncated=True if cut_short or not (a.complete and b.complete) else None,
    )


def _settled_end(a: LoggedRun, b: LoggedRun) -> int:
    """Where the comparison stops: the end of the longer log, or of a prefix before it.

    Past the end of a prefix that run may still write an event, so a sequence
    there is neither `added` nor `removed` yet.
    """
    end = max(len(a.events), len(b.events))
    for log in (a, b):
        if not log.complete:
            end = min(end, len(log.events))
    return end


def _entry(
    seq: int,
    raw_a: Sequence[Event],
    raw_b: Sequence[Event],
    seen_a: list[JsonObject],
    seen_b: list[JsonObject],
) -> EventDiff | None:
    in_a, in_b = seq < len(raw_a), seq < len(raw_b)
    if in_a and in_b:
        if json_equal(seen_a[seq], seen_b[seq]):
            return None
        return EventDiff(seq=seq, op="changed", aEvent=dict(raw_a[seq]), bEvent=dict(raw_b[seq]))
    if in_a:
        return EventDiff(seq=seq, op="removed", aEvent=dict(raw_a[seq]))
    return EventDiff(seq=seq, op="added", bEvent=dict(raw_b[seq]))


class _Comparable:
    """One log's events in comparison form, fed in log order.

    runs.md: "`eventId`, `runId`, `timestamp` and other run-scoped fields MUST
    be excluded from comparison." Those are the envelope's `ENVELOPE_EXCLUDED`,
    the payload's `WALL_CLOCK` fields, and the `MINTED_IDS`, which are replaced
    by their first-appearance ordinal rather than dropped. Everything else —
    type, node, schema version, the payload's content, the ids of other runs it
    names — compares as it is.
    """

    def __init__(self) -> None:
        self._ordinals: dict[str, dict[str, int]] = {}
        self._eval_run = False

    def __call__(self, event: Event) -> JsonObject:
        kept = {name: value for name, value in event.items() if name not in ENVELOPE_EXCLUDED}
        payload = kept.get("payload")
        if isinstance(payload, dict):
            kept["payload"] = self._payload(str(kept.get("type")), payload)
        return kept

    def _payload(self, event_type: str, payload: JsonObject) -> JsonObject:
        if event_type == events.EvalStarted.TYPE:
            self._eval_run = True
        clocks = WALL_CLOCK.get(event_type, ())
        kept = {name: value for name, value in payload.items() if name not in clocks}
        for name in MINTED_IDS.get(event_type, ()):
            value = kept.get(name)
            if isinstance(value, str):
                kept[name] = self._ordinal(name, value)
        if event_type == events.RunCompleted.TYPE and self._eval_run:
            return _without_task_latencies(kept)
        return kept

    def _ordinal(self, name: str, value: str) -> int:
        seen = self._ordinals.setdefault(name, {})
        return seen.setdefault(value, len(seen))


def _without_task_latencies(payload: JsonObject) -> JsonObject:
    """An eval run's `run.completed`, its summary's per-task `latencyMs` left out."""
    outputs = payload.get("outputs")
    if not isinstance(outputs, dict):
        return payload
    summary = outputs.get("evalSummary")
    listed = summary.get("tasks") if isinstance(summary, dict) else None
    if not isinstance(summary, dict) or not isinstance(listed, list):
        return payload
    tasks = [_without_latency(task) for task in listed]
    return {**payload, "outputs": {**outputs, "evalSummary": {**summary, "tasks": tasks}}}


def _without_latency(task: JsonValue) -> JsonValue:
    if not isinstance(task, dict):
        return task
    return {name: value for name, value in task.items() if name != "latencyMs"}


def _fold_state(log: Sequence[Event]) -> JsonObject:
    """The run state a log folds to: its status, and the terminal event's outputs or error."""
    state: JsonObject = {"status": RunStatus.PENDING.value}
    for event in log:
        event_type = event.get("type")
        payload = event.get("payload")
        status = _STATUS_AFTER.get(str(event_type))
        if status is not None:
            state["status"] = status.value
        if not isinstance(payload, dict):
            continue
        if event_type == events.RunCompleted.TYPE and "outputs" in payload:
            state["outputs"] = payload["outputs"]
        if event_type == events.RunFailed.TYPE and "error" in payload:
            state["error"] = payload["error"]
    return state


def _state_diff(
    raw_a: Sequence[Event],
    raw_b: Sequence[Event],
    seen_a: list[JsonObject],
    seen_b: list[JsonObject],
) -> dict[str, StateChange]:
    # Compared in comparison form, shown as stored.
    shown_a, shown_b = _fold_state(raw_a), _fold_state(raw_b)
    compared_a, compared_b = _fold_state(seen_a), _fold_state(seen_b)
    return {
        name: StateChange(a=shown_a.get(name), b=shown_b.get(name))
        for name in STATE_FIELDS
        if not _same_field(compared_a, compared_b, name)
    }


def _same_field(a: JsonObject, b: JsonObject, name: str) -> bool:
    if (name in a) != (name in b):
        return False
    return name not in a or json_equal(a[name], b[name])
