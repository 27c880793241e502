"""Recorded tool calls: the as-executed boundary (docs/design.md §3 "Recording")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import JsonValue
from sqlalchemy import and_, bindparam, func, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from wopeval.evals import RecordedCall, RecordedStatus, ServedBy
from wopeval.store._rows import shallow_fields
from wopeval.store.tables import runs, tool_calls


@dataclass(frozen=True, slots=True)
class ToolCallRow:
    """One call as the boundary executed it; keyed by its `agent.tool-called` sequence."""

    invocation_id: str
    agent_id: str
    is_delegate: bool
    tool: str
    call_id: str
    status: RecordedStatus
    served_by: ServedBy
    duration_ms: int | None
    recorded: bool
    """False when the agent's `record` is off: the call is listed without content."""
    inputs: JsonValue
    result: JsonValue
    error: dict[str, JsonValue] | None

    def to_row(self, run_id: str, sequence: int) -> dict[str, Any]:
        return {**shallow_fields(self), "run_id": run_id, "sequence": sequence}


@dataclass(frozen=True, slots=True)
class ToolCallOutcome:
    """What a live call, recorded `unknown` before it ran, turned out to return."""

    status: Literal["ok", "error", "forbidden", "rate_limited"]
    result: JsonValue
    error: dict[str, JsonValue] | None
    duration_ms: int | None
    recorded: bool


def _recorded_call(row: Any) -> RecordedCall:
    return RecordedCall(
        sequence=row.sequence,
        invocation_id=row.invocation_id,
        agent_id=row.agent_id,
        is_delegate=row.is_delegate,
        tool=row.tool,
        call_id=row.call_id,
        inputs=row.inputs,
        status=row.status,
        result=row.result,
        error=row.error,
        served_by=row.served_by,
        duration_ms=row.duration_ms,
    )


def _held(row: Any) -> bool:
    """Recorded with its content and outcome, and not erased since."""
    return bool(row.recorded and row.erased_at is None and row.status != "unknown")


class ToolCallsRepo:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def append(self, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            await self._connection.execute(tool_calls.insert(), list(rows))

    async def complete(self, outcomes: Sequence[tuple[str, int, ToolCallOutcome]]) -> None:
        """Give live calls, keyed by run and `agent.tool-called` sequence, their outcome."""
        if not outcomes:
            return
        statement = (
            update(tool_calls)
            .where(
                and_(
                    tool_calls.c.run_id == bindparam("key_run_id"),
                    tool_calls.c.sequence == bindparam("key_sequence"),
                )
            )
            .values(
                status=bindparam("new_status"),
                result=bindparam("new_result"),
                error=bindparam("new_error"),
                duration_ms=bindparam("new_duration_ms"),
            )
        )
        await self._connection.execute(
            statement,
            [
                {
                    "key_run_id": run_id,
                    "key_sequence": sequence,
                    "new_status": outcome.status,
                    "new_result": outcome.result if outcome.recorded else None,
                    "new_error": outcome.error if outcome.recorded else None,
                    "new_duration_ms": outcome.duration_ms,
                }
                for run_id, sequence, outcome in outcomes
            ],
        )

    async def held_calls(self, run_id: str, agent_id: str) -> tuple[list[RecordedCall], bool]:
        """The agent's calls in the run, and whether every one is still held with content."""
        result = await self._connection.execute(
            select(tool_calls)
            .where(and_(tool_calls.c.run_id == run_id, tool_calls.c.agent_id == agent_id))
            .order_by(tool_calls.c.sequence)
        )
        rows = list(result)
        all_held = all(_held(row) for row in rows)
        return [_recorded_call(row) for row in rows], all_held

    async def page(self, run_id: str, *, after: int, limit: int) -> list[RecordedCall]:
        """Every agent's calls in the run after sequence `after`, in order, at most `limit`."""
        result = await self._connection.execute(
            select(tool_calls)
            .where(and_(tool_calls.c.run_id == run_id, tool_calls.c.sequence > after))
            .order_by(tool_calls.c.sequence)
            .limit(limit)
        )
        return [_recorded_call(row) for row in result]

    async def still_held(self, run_id: str, agent_id: str) -> bool:
        """Whether the agent's calls in the run still hold their content, share-locking them.

        On PostgreSQL the lock makes an erasure of these rows wait for the caller's
        transaction, so a copy taken from them can never outlive their erasure;
        SQLite serialises writers anyway.
        """
        result = await self._connection.execute(
            select(tool_calls.c.recorded, tool_calls.c.erased_at, tool_calls.c.status)
            .where(and_(tool_calls.c.run_id == run_id, tool_calls.c.agent_id == agent_id))
            .with_for_update(read=True)
        )
        return all(_held(row) for row in result)

    async def erase(self, run_id: str, at: datetime) -> int:
        result = await self._connection.execute(
            update(tool_calls)
            .where(and_(tool_calls.c.run_id == run_id, tool_calls.c.erased_at.is_(None)))
            .values(inputs=None, result=None, error=None, erased_at=at)
        )
        return int(result.rowcount or 0)

    async def run_ids_older_than(self, cutoff: datetime) -> list[str]:
        """Terminal runs finished before `cutoff` that still hold tool content (retention)."""
        result = await self._connection.execute(
            select(tool_calls.c.run_id)
            .join(runs, runs.c.run_id == tool_calls.c.run_id)
            .where(and_(runs.c.completed_at < cutoff, tool_calls.c.erased_at.is_(None)))
            .group_by(tool_calls.c.run_id)
        )
        return list(result.scalars())

    async def count_live(self, run_id: str) -> int:
        result = await self._connection.execute(
            select(func.count())
            .select_from(tool_calls)
            .where(and_(tool_calls.c.run_id == run_id, tool_calls.c.served_by == "live"))
        )
        return int(result.scalar_one())

    async def copy(self, source_run_id: str, target_run_id: str) -> None:
        """Give a replay the record of the run it re-emits (same content, same erasure)."""
        result = await self._connection.execute(
            select(tool_calls).where(tool_calls.c.run_id == source_run_id)
        )
        rows = [{**row, "run_id": target_run_id} for row in result.mappings()]
        await self.append(rows)
