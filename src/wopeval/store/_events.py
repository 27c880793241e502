"""The append-only event log. Rows are written only by the engine's run log writer."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from sqlalchemy import and_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

import wopeval.store._driver as _driver
from wopeval.store._runs import RunHandle
from wopeval.store.tables import INVOCATION_STARTED, events

EVENTS_PAGE_SIZE = 1000
"""The most events one read returns: a poll response, one catch-up read of a stream."""


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One event of a log: its sequence and type, and the RunEventDoc as it was serialized."""

    sequence: int
    type: str
    doc: str


_APPEND = events.insert()
"""Built once: the run log writer inserts through it in every transaction it writes."""

EventRow = tuple[str, int, str, str]
"""An event's row as it is inserted: its values of `EVENT_COLUMNS`."""

EVENT_COLUMNS = ("run_id", "sequence", "type", "doc")


class EventsRepo:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def append(self, rows: Sequence[EventRow]) -> None:
        """Insert rows `(run_id, sequence, type, doc)`; a sequence taken twice fails the step."""
        await _driver.insert_many(self._connection, _APPEND, EVENT_COLUMNS, rows)

    async def read(
        self,
        run: RunHandle,
        *,
        after: int,
        through: int | None = None,
        limit: int = EVENTS_PAGE_SIZE,
    ) -> list[StoredEvent]:
        """The events with `after` < sequence (<= `through`), in order, at most `limit`."""
        query = select(events.c.sequence, events.c.type, events.c.doc).where(
            and_(events.c.run_id == run.run_id, events.c.sequence > after)
        )
        if through is not None:
            query = query.where(events.c.sequence <= through)
        result = await self._connection.execute(query.order_by(events.c.sequence).limit(limit))
        return [StoredEvent(row.sequence, row.type, row.doc) for row in result]

    async def all_docs(self, run: RunHandle) -> list[str]:
        result = await self._connection.execute(
            select(events.c.doc).where(events.c.run_id == run.run_id).order_by(events.c.sequence)
        )
        return list(result.scalars())

    async def rewrite(self, run_id: str, docs: dict[int, str]) -> None:
        """Replace stored docs by sequence; only the erasure path calls this (G7)."""
        for sequence, doc in docs.items():
            await self._connection.execute(
                update(events)
                .where(and_(events.c.run_id == run_id, events.c.sequence == sequence))
                .values(doc=doc)
            )

    async def invoked_agents(self, run: RunHandle) -> list[str]:
        """The agent of each `agent.invocation-started` in the run, in log order (repeats kept).

        Read from the log, not the run row, so a run that ended mid-invocation (its host
        killed) still shows the invocations it started.
        """
        return (await self.invoked_agents_of([run]))[run.run_id]

    async def invoked_agents_of(self, runs: Collection[RunHandle]) -> dict[str, list[str]]:
        """`invoked_agents` of each run, by run id, in one query."""
        found: dict[str, list[str]] = {run.run_id: [] for run in runs}
        if not found:
            return found
        result = await self._connection.execute(
            select(events.c.run_id, events.c.doc)
            .where(
                and_(
                    events.c.run_id.in_(list(found)),
                    INVOCATION_STARTED,
                )
            )
            .order_by(events.c.run_id, events.c.sequence)
        )
        for row in result:
            found[row.run_id].append(json.loads(row.doc)["payload"]["agentId"])
        return found

    async def docs_at(self, run: RunHandle, sequences: Sequence[int]) -> dict[int, str]:
        """The docs at these sequences (those the log has), by sequence."""
        if not sequences:
            return {}
        result = await self._connection.execute(
            select(events.c.sequence, events.c.doc).where(
                and_(events.c.run_id == run.run_id, events.c.sequence.in_(list(sequences)))
            )
        )
        return {row.sequence: row.doc for row in result}

    async def docs_of_types(self, run: RunHandle, types: Sequence[str]) -> dict[int, str]:
        result = await self._connection.execute(
            select(events.c.sequence, events.c.doc).where(
                and_(events.c.run_id == run.run_id, events.c.type.in_(list(types)))
            )
        )
        return {row.sequence: row.doc for row in result}
