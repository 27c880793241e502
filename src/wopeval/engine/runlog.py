"""The one writer of run logs (G7): steps stage events and tool records, a commit writes them.

A step is the unit that commits together: its events, the tool calls they
record and the run row's new state land in one transaction, so a crash never
leaves a gap in the sequence or half of a step. Sequences are assigned at
commit, which also keeps each step's events contiguous in the log.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from wopeval.engine.notifier import Notifier
from wopeval.store import Store
from wopeval.wire import events, ids


def now() -> datetime:
    return datetime.now(UTC)


def timestamp(at: datetime) -> str:
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class _Staged:
    payload: dict[str, Any]
    type: str
    at: datetime
    node_id: str | None
    event_id: str = field(default_factory=ids.mint_local_id)


@dataclass
class Step:
    """Events and tool records staged to commit together."""

    staged: list[_Staged] = field(default_factory=list)
    calls: list[tuple[int, dict[str, Any]]] = field(default_factory=list)

    def emit(self, payload: events.Payload, *, node_id: str | None = None) -> int:
        """Stage an event; returns its index in the step."""
        return self.emit_raw(payload.TYPE, payload.to_wire(), node_id=node_id)

    def emit_raw(self, type_: str, payload: dict[str, Any], *, node_id: str | None = None) -> int:
        self.staged.append(_Staged(payload, type_, now(), node_id))
        return len(self.staged) - 1

    def record_call(self, called_index: int, row: dict[str, Any]) -> None:
        """Stage a tool record keyed by the index of its `agent.tool-called` event."""
        self.calls.append((called_index, row))

    def extend(self, other: Step) -> None:
        offset = len(self.staged)
        self.staged.extend(other.staged)
        self.calls.extend((index + offset, row) for index, row in other.calls)


@dataclass
class _Queued:
    step: Step
    run_values: dict[str, Any]
    done: asyncio.Future[None]


class RunLog:
    """Appends to one run's log. One instance per active run, owned by the engine.

    Commits are grouped: while one transaction is being written, the steps that
    arrive queue up and go out together in the next one. Each step still lands
    whole or not at all, in arrival order, and its caller resumes only once it
    is durable.
    """

    def __init__(self, store: Store, notifier: Notifier, run_id: str, tenant: str, last: int):
        self._store = store
        self._notifier = notifier
        self.run_id = run_id
        self.tenant = tenant
        self._next = last + 1
        self._queue: list[_Queued] = []
        self._flusher: asyncio.Task[None] | None = None

    async def commit(self, step: Step, **run_values: Any) -> None:
        """Write the step's events, its tool records and `run_values` in one transaction."""
        queued = _Queued(step, run_values, asyncio.get_running_loop().create_future())
        self._queue.append(queued)
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush(), name=f"runlog:{self.run_id}")
        # The flusher owns the write: a caller cancelled while waiting still gets its step
        # written, in order, before anything queued after it.
        await asyncio.shield(queued.done)

    async def _flush(self) -> None:
        while self._queue:
            batch, self._queue = self._queue, []
            first = self._next
            rows: list[dict[str, Any]] = []
            calls: list[dict[str, Any]] = []
            run_values: dict[str, Any] = {}
            for queued in batch:
                step_rows, step_calls = render_rows(self.run_id, first + len(rows), queued.step)
                rows += step_rows
                calls += step_calls
                run_values.update(queued.run_values)
            try:
                async with self._store.transaction() as uow:
                    await uow.events.append(rows)
                    await uow.tool_calls.append(calls)
                    await uow.runs.update(
                        self.tenant, self.run_id, last_sequence=first + len(rows) - 1, **run_values
                    )
            except BaseException as exc:
                cancelled = not isinstance(exc, Exception)
                # Once cancelled nothing else will flush: fail what is queued as well.
                failed = batch + self._queue if cancelled else batch
                if cancelled:
                    self._queue = []
                for queued in failed:
                    if not queued.done.done():
                        queued.done.set_exception(exc)
                if cancelled:
                    raise
                continue
            self._next = first + len(rows)
            for queued in batch:
                if not queued.done.done():
                    queued.done.set_result(None)
            self._notifier.notify(self.run_id)


def render(run_id: str, sequence: int, staged: _Staged) -> str:
    doc: dict[str, Any] = {
        "eventId": staged.event_id,
        "runId": run_id,
        "type": staged.type,
        "payload": staged.payload,
        "timestamp": timestamp(staged.at),
        "sequence": sequence,
        "schemaVersion": events.SCHEMA_VERSION,
    }
    if staged.node_id is not None:
        doc["nodeId"] = staged.node_id
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def render_rows(
    run_id: str, first: int, step: Step
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The event rows and tool-call rows of `step`, numbered from `first`."""
    rows = [
        {
            "run_id": run_id,
            "sequence": first + i,
            "type": staged.type,
            "doc": render(run_id, first + i, staged),
        }
        for i, staged in enumerate(step.staged)
    ]
    calls = [{**row, "run_id": run_id, "sequence": first + index} for index, row in step.calls]
    return rows, calls
