"""Invocations and eval trials as the host saw them: the "why" behind a run's events."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

import wopeval.store._driver as _driver
from wopeval.store._rows import copy_rows, field_values, row_columns
from wopeval.store._runs import RunHandle, utc
from wopeval.store.tables import invocations, task_trials
from wopeval.wire.runs import IdleAgent


@dataclass(slots=True)
class InvocationRow:
    """One agent invocation: how it ended and, if the agent raised, what (host-only).

    Not frozen, as `TrialRow`: one is built for every invocation, and a frozen dataclass
    of this width takes several times as long to build (each field set through
    `object.__setattr__`); nothing changes it once built."""

    invocation_id: str
    agent_id: str
    is_delegate: bool
    node_id: str | None
    task_id: str | None
    trial: int | None
    outcome: str
    error: dict[str, Any] | None
    """`{type, message, traceback}` of the exception the agent raised."""
    started_at: datetime
    completed_at: datetime
    tools_digest: str | None = None
    """Digest of the tool listing (names, descriptions, input schemas) the agent was offered."""
    stderr: str | None = None
    """What the agent said (a command agent's stderr), redacted and bounded."""
    idle: list[str] | None = None
    """Why the completed invocation recorded nothing a replay could test; None: it did."""

    def to_row(self, run_id: str) -> tuple[Any, ...]:
        """The row as it is inserted: the run's id, then the fields (the table's order)."""
        return (run_id, *field_values(self))


@dataclass(frozen=True, slots=True)
class StoredInvocation:
    """An invocation as a listing shows it: everything but what its agent said."""

    invocation_id: str
    agent_id: str
    is_delegate: bool
    node_id: str | None
    task_id: str | None
    trial: int | None
    outcome: str
    error: dict[str, Any] | None
    started_at: datetime
    completed_at: datetime
    idle: list[str] | None
    said_something: bool
    """Its agent said something (its stderr is kept)."""


@dataclass(frozen=True, slots=True)
class InvocationSaid:
    """What one invocation's agent said, as kept (redacted, bounded)."""

    invocation_id: str
    agent_id: str
    stderr: str | None


@dataclass(slots=True)
class TrialRow:
    """One eval trial's detail, whole; what of it may leave the host is `wire_content`'s call.

    Not frozen: one is built for every trial (see `InvocationRow`)."""

    task_id: str
    trial: int
    passed: bool
    wire_content: str
    detail: dict[str, Any]
    latency_ms: int | None = None
    fixture_misses: int | None = None

    def to_row(self, run_id: str) -> tuple[Any, ...]:
        """The row as it is inserted: the run's id, then the fields (the table's order)."""
        return (run_id, *field_values(self))

    def counts(self) -> TrialCounts:
        return TrialCounts(
            self.task_id, self.trial, self.passed, self.latency_ms or 0, self.fixture_misses or 0
        )


@dataclass(frozen=True, slots=True)
class TrialCounts:
    """What a landed trial came to, without its detail: what a summary is built from."""

    task_id: str
    trial: int
    passed: bool
    latency_ms: int
    fixture_misses: int


@dataclass(frozen=True, slots=True)
class StoredTrial:
    task_id: str
    trial: int
    passed: bool
    wire_content: str
    detail: dict[str, Any]
    erased: bool


_APPEND_INVOCATIONS = invocations.insert()
_APPEND_TRIALS = task_trials.insert()
"""Built once: the run log writer inserts through them in every transaction it writes."""


class InvocationsRepo:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def append(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Insert `InvocationRow.to_row`'s rows."""
        await _driver.insert_many(
            self._connection, _APPEND_INVOCATIONS, row_columns(InvocationRow), rows
        )

    async def copy(self, source: RunHandle, target_run_id: str) -> None:
        """Give a replay the invocations of the run it re-emits."""
        await copy_rows(self._connection, invocations, source.run_id, target_run_id)

    async def of_run(self, run: RunHandle) -> list[dict[str, Any]]:
        result = await self._connection.execute(
            select(invocations)
            .where(invocations.c.run_id == run.run_id)
            .order_by(invocations.c.started_at)
        )
        return [dict(row) for row in result.mappings()]

    async def listing(self, run: RunHandle) -> list[StoredInvocation]:
        """The run's invocations in the order they started, without what their agents said."""
        columns = [c for c in invocations.c if c.name not in ("stderr", "tools_digest")]
        result = await self._connection.execute(
            select(*columns, invocations.c.stderr.is_not(None).label("said_something"))
            .where(invocations.c.run_id == run.run_id)
            .order_by(invocations.c.started_at, invocations.c.invocation_id)
        )
        return [
            StoredInvocation(
                invocation_id=row.invocation_id,
                agent_id=row.agent_id,
                is_delegate=row.is_delegate,
                node_id=row.node_id,
                task_id=row.task_id,
                trial=row.trial,
                outcome=row.outcome,
                error=row.error,
                started_at=utc(row.started_at),
                completed_at=utc(row.completed_at),
                idle=row.idle or None,
                said_something=bool(row.said_something),
            )
            for row in result
        ]

    async def said(
        self, run: RunHandle, invocation_ids: Collection[str]
    ) -> dict[str, InvocationSaid]:
        """What these invocations of the run said, by id; an id the run lacks is absent."""
        result = await self._connection.execute(
            select(invocations.c.invocation_id, invocations.c.agent_id, invocations.c.stderr).where(
                invocations.c.run_id == run.run_id,
                invocations.c.invocation_id.in_(list(invocation_ids)),
            )
        )
        return {row.invocation_id: InvocationSaid(*row) for row in result}

    async def erase_said(self, run_id: str) -> None:
        """Forget what the run's agents said (the erasure path only): it may quote content."""
        await self._connection.execute(
            update(invocations).where(invocations.c.run_id == run_id).values(stderr=None)
        )

    async def idle_nodes(self, run: RunHandle, node_ids: Collection[str]) -> list[IdleAgent]:
        """The idle agents of these nodes of a workflow run."""
        result = await self._connection.execute(
            select(invocations.c.agent_id, invocations.c.node_id, invocations.c.idle)
            .where(
                invocations.c.run_id == run.run_id,
                invocations.c.is_delegate.is_(False),
                invocations.c.node_id.in_(list(node_ids)),
            )
            .order_by(invocations.c.started_at)
        )
        # Most have no `idle`: read back as JSON null or SQL NULL, whichever the driver wrote.
        return [
            IdleAgent(agentId=row.agent_id, nodeId=row.node_id, reasons=row.idle)
            for row in result
            if row.idle
        ]


class TrialsRepo:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def append(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Insert `TrialRow.to_row`'s rows."""
        await _driver.insert_many(self._connection, _APPEND_TRIALS, row_columns(TrialRow), rows)

    async def copy(self, source: RunHandle, target_run_id: str) -> None:
        """Give a replay the trial details of the run it re-emits (same erasure)."""
        await copy_rows(self._connection, task_trials, source.run_id, target_run_id)

    async def of_run(self, run: RunHandle, task_id: str | None = None) -> list[StoredTrial]:
        """The run's trials (of one task, when named), by task and trial number."""
        query = select(task_trials).where(task_trials.c.run_id == run.run_id)
        if task_id is not None:
            query = query.where(task_trials.c.task_id == task_id)
        result = await self._connection.execute(
            query.order_by(task_trials.c.task_id, task_trials.c.trial)
        )
        return [
            StoredTrial(
                task_id=row.task_id,
                trial=row.trial,
                passed=row.passed,
                wire_content=row.wire_content,
                detail=row.detail,
                erased=row.erased_at is not None,
            )
            for row in result
        ]

    async def counts(self, run: RunHandle, task_id: str | None = None) -> list[TrialCounts]:
        """The landed trials' outcomes (of one task, when named), by task and trial."""
        return await self._counts(run, None if task_id is None else [task_id])

    async def counts_of(self, run: RunHandle, task_ids: Collection[str]) -> list[TrialCounts]:
        """The landed trials' outcomes of these tasks, by task and trial."""
        return await self._counts(run, list(task_ids))

    async def _counts(self, run: RunHandle, task_ids: list[str] | None) -> list[TrialCounts]:
        query = select(
            task_trials.c.task_id,
            task_trials.c.trial,
            task_trials.c.passed,
            task_trials.c.latency_ms,
            task_trials.c.fixture_misses,
        ).where(task_trials.c.run_id == run.run_id)
        if task_ids is not None:
            query = query.where(task_trials.c.task_id.in_(task_ids))
        result = await self._connection.execute(
            query.order_by(task_trials.c.task_id, task_trials.c.trial)
        )
        return [
            TrialCounts(
                row.task_id, row.trial, row.passed, row.latency_ms or 0, row.fixture_misses or 0
            )
            for row in result
        ]

    async def landed(self, run: RunHandle, task_ids: Collection[str]) -> set[tuple[str, int]]:
        """Which `(task_id, trial)` of these tasks have landed in the run."""
        result = await self._connection.execute(
            select(task_trials.c.task_id, task_trials.c.trial).where(
                and_(task_trials.c.run_id == run.run_id, task_trials.c.task_id.in_(list(task_ids)))
            )
        )
        return {(row.task_id, row.trial) for row in result}

    async def rewrite(
        self, run_id: str, details: dict[tuple[str, int], dict[str, Any]], at: datetime
    ) -> None:
        """Replace trial details after their tool content was erased (the erasure path only)."""
        for (task_id, trial), detail in details.items():
            await self._connection.execute(
                update(task_trials)
                .where(
                    and_(
                        task_trials.c.run_id == run_id,
                        task_trials.c.task_id == task_id,
                        task_trials.c.trial == trial,
                    )
                )
                .values(detail=detail, erased_at=at)
            )
