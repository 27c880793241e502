"""Recorded model exchanges: the model boundary, recorded beside the tool boundary.

One row per exchange of an invocation with its model — through an LLM lane or
the model proxy, over any of the wire APIs (`api`) — with the request as sent
(never the API key), the answer as its API records it, usage, latency and cost.
Content columns are erased with the run's tool content (the messages carry the
tools' results).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Literal

from pydantic import JsonValue
from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

import wopeval.store._driver as _driver
from wopeval.evals import ModelServedBy, RecordedExchange
from wopeval.store._rows import copy_rows, field_values, row_columns
from wopeval.store._runs import RunHandle
from wopeval.store.tables import model_calls, runs

ModelVia = Literal["lane", "proxy", "judge"]

TOKEN_COUNT_MAX = 2**31 - 1
"""The largest count `prompt_tokens` and `completion_tokens` hold (SQL `integer`, 32 bits
on PostgreSQL; its least is `-TOKEN_COUNT_MAX - 1`)."""


@dataclass(frozen=True, slots=True)
class ModelCallRow:
    """One model exchange as the host executed it (or served it from a recording)."""

    invocation_id: str
    ordinal: int
    agent_id: str
    is_delegate: bool
    api: str
    """The wire API (`chat`, `responses`, `messages`: wopeval.models.ApiName)."""
    via: ModelVia
    served_by: ModelServedBy
    status: Literal["ok", "error"]
    request_hash: str
    model: str | None
    """The model the request named."""
    response_model: str | None
    """The model id the answer reported."""
    stream: bool
    attempts: int
    latency_ms: int
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None
    at: datetime
    recorded: bool
    """False when the agent's `record_model` is off: the exchange is listed without content."""
    request: JsonValue
    response: JsonValue
    error: dict[str, JsonValue] | None

    def to_row(self, run_id: str) -> tuple[Any, ...]:
        """The row as it is inserted: the run's id, then the fields (the table's order)."""
        return (run_id, *field_values(self))


def _held(row: Any) -> bool:
    return bool(row.recorded and row.erased_at is None)


_ROW_FIELDS = tuple(field.name for field in fields(ModelCallRow))

_APPEND = model_calls.insert()
"""Built once: the run log writer inserts through it in every transaction it writes."""


class ModelCallsRepo:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def append(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Insert `ModelCallRow.to_row`'s rows."""
        await _driver.insert_many(self._connection, _APPEND, row_columns(ModelCallRow), rows)

    async def of_run(self, run: RunHandle) -> list[ModelCallRow]:
        """Every exchange of the run, in the order they ended (content as still held)."""
        result = await self._connection.execute(
            select(*(model_calls.c[name] for name in _ROW_FIELDS))
            .where(model_calls.c.run_id == run.run_id)
            .order_by(model_calls.c.at, model_calls.c.invocation_id, model_calls.c.ordinal)
        )
        return [ModelCallRow(**row) for row in result.mappings()]

    async def held_exchanges(
        self, run: RunHandle, agent_id: str
    ) -> tuple[list[RecordedExchange], bool]:
        """The agent's live exchanges in the run, in order, and whether all still hold content."""
        result = await self._connection.execute(
            select(model_calls)
            .where(
                and_(
                    model_calls.c.run_id == run.run_id,
                    model_calls.c.agent_id == agent_id,
                    model_calls.c.served_by != "miss",
                )
            )
            .order_by(model_calls.c.at, model_calls.c.invocation_id, model_calls.c.ordinal)
        )
        rows = list(result)
        exchanges = [
            RecordedExchange(
                invocation_id=row.invocation_id,
                agent_id=row.agent_id,
                is_delegate=row.is_delegate,
                ordinal=row.ordinal,
                request_hash=row.request_hash,
                status=row.status,
                response=row.response,
                api=row.api,
                request=row.request,
            )
            for row in rows
        ]
        return exchanges, all(_held(row) for row in rows)

    async def still_held(self, run_ids: Collection[str], agent_id: str) -> bool:
        """Like `ToolCallsRepo.still_held`, under the same share lock on the runs."""
        if not run_ids:
            return True
        result = await self._connection.execute(
            select(func.count()).where(
                and_(
                    model_calls.c.run_id.in_(list(run_ids)),
                    model_calls.c.agent_id == agent_id,
                    or_(model_calls.c.recorded.is_(False), model_calls.c.erased_at.is_not(None)),
                )
            )
        )
        return int(result.scalar_one()) == 0

    async def erase(self, run_id: str, at: datetime) -> int:
        result = await self._connection.execute(
            update(model_calls)
            .where(and_(model_calls.c.run_id == run_id, model_calls.c.erased_at.is_(None)))
            .values(request=None, response=None, error=None, erased_at=at)
        )
        return int(result.rowcount or 0)

    async def run_ids_older_than(self, cutoff: datetime) -> list[str]:
        """Terminal runs finished before `cutoff` that still hold model content (retention)."""
        result = await self._connection.execute(
            select(model_calls.c.run_id)
            .join(runs, runs.c.run_id == model_calls.c.run_id)
            .where(and_(runs.c.completed_at < cutoff, model_calls.c.erased_at.is_(None)))
            .group_by(model_calls.c.run_id)
        )
        return list(result.scalars())

    async def count_live(self, run: RunHandle) -> int:
        """Exchanges of the run that reached an upstream model."""
        result = await self._connection.execute(
            select(func.count())
            .select_from(model_calls)
            .where(and_(model_calls.c.run_id == run.run_id, model_calls.c.served_by == "live"))
        )
        return int(result.scalar_one())

    async def own_counts(self, sources: Collection[RunHandle], agent_id: str) -> dict[str, int]:
        """How many exchanges `agent_id` itself (not a delegate) made in each of these runs,
        by run id."""
        run_ids = [source.run_id for source in sources]
        result = await self._connection.execute(
            select(model_calls.c.run_id, func.count())
            .where(
                and_(
                    model_calls.c.run_id.in_(run_ids),
                    model_calls.c.agent_id == agent_id,
                    model_calls.c.is_delegate.is_(False),
                )
            )
            .group_by(model_calls.c.run_id)
        )
        counted = {row[0]: int(row[1]) for row in result}
        return {run_id: counted.get(run_id, 0) for run_id in run_ids}

    async def copy(self, source: RunHandle, target_run_id: str) -> None:
        """Give a replay fork the model record of the run it re-emits."""
        await copy_rows(self._connection, model_calls, source.run_id, target_run_id)
