"""Recorded tool calls: the as-executed boundary (DESIGN.md §3 "Recording")."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from wopeval.evals import RecordedCall
from wopeval.store.tables import runs, tool_calls


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
    """Recorded with its content, and not erased since."""
    return bool(row.recorded and row.erased_at is None)


class ToolCallsRepo:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def append(self, rows: Sequence[dict[str, Any]]) -> None:
        if rows:
            await self._connection.execute(tool_calls.insert(), list(rows))

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

    async def still_held(self, run_id: str, agent_id: str) -> bool:
        """Whether the agent's calls in the run still hold their content, share-locking them.

        On PostgreSQL the lock makes an erasure of these rows wait for the caller's
        transaction, so a copy taken from them can never outlive their erasure;
        SQLite serialises writers anyway.
        """
        result = await self._connection.execute(
            select(tool_calls.c.recorded, tool_calls.c.erased_at)
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
