"""Recorded tool calls: the as-executed boundary (docs/design.md §3 "Recording")."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import groupby
from operator import itemgetter
from typing import Any, Literal, NamedTuple

from pydantic import JsonValue
from sqlalchemy import (
    ColumnElement,
    Text,
    and_,
    bindparam,
    case,
    cast,
    func,
    literal,
    or_,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

import wopeval.store._driver as _driver
from wopeval.evals import RecordedCall, RecordedStatus, ServedBy
from wopeval.store._rows import copy_rows
from wopeval.store._runs import RunHandle
from wopeval.store.tables import runs, tool_calls
from wopeval.wire import json_text


class ToolCallRow(NamedTuple):
    """One call as the boundary executed it; keyed by its `agent.tool-called` sequence.

    A named tuple, not a frozen dataclass: one is built for every tool call, and a frozen
    dataclass of this width takes twice as long to build."""

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
    inputs: JsonValue | bytes
    """The args, or the text `json_text.written` wrote of them (bytes: no JSON value is)."""
    result: JsonValue | bytes
    """The answer, or its text as `inputs`."""
    error: dict[str, JsonValue] | None

    def to_row(self, run_id: str, sequence: int) -> tuple[Any, ...]:
        """The row as it is inserted, its values of `_COLUMNS` (the table's order), its JSON
        columns written (`insert_many`'s `written`): a text written already goes in as it
        is, not through the codec again."""
        return (
            run_id,
            sequence,
            *self[:9],
            _column_text(self.inputs),
            _column_text(self.result),
            _column_text(self.error),
        )


def _column_text(value: JsonValue | bytes) -> str:
    """A JSON column's text, as the store's codec writes it (None too is `null`, not SQL
    NULL: the columns' JSON type says so)."""
    if value is None:
        return "null"
    if type(value) is bytes:
        return value.decode("utf-8")
    return json_text.compact(value)


_COLUMNS = ("run_id", "sequence", *ToolCallRow._fields)
"""The columns a `tool_calls` row is inserted with, in `ToolCallRow.to_row`'s order."""


class DerivedSource(NamedTuple):
    """A fixture source as a create reads it for one agent: the RFC 0252 §D documents its
    own calls derive to, and the §C facts of its calls."""

    documents: str
    """The `toolResponses` documents, as one JSON array's text."""
    all_held: bool
    """Every call of the agent (delegates' too) still holds its content and outcome."""
    has_failed_call: bool
    """Some own call of the agent failed or never ran."""


@dataclass(frozen=True, slots=True)
class ToolCallOutcome:
    """What a live call, recorded `unknown` before it ran, turned out to return."""

    status: Literal["ok", "error", "forbidden", "rate_limited"]
    result: JsonValue
    error: dict[str, JsonValue] | None
    duration_ms: int | None
    recorded: bool


_LISTED = (
    tool_calls.c.sequence,
    tool_calls.c.invocation_id,
    tool_calls.c.agent_id,
    tool_calls.c.is_delegate,
    tool_calls.c.tool,
    tool_calls.c.call_id,
    tool_calls.c.status,
    tool_calls.c.served_by,
    tool_calls.c.duration_ms,
)


def _json_text(column: ColumnElement[Any]) -> ColumnElement[str]:
    return func.coalesce(cast(column, Text), "null")


_CONTENTS = (
    literal("[", Text)
    + _json_text(tool_calls.c.inputs)
    + ","
    + _json_text(tool_calls.c.result)
    + ","
    + _json_text(tool_calls.c.error)
    + "]"
).label("contents")
"""A call's `[inputs, result, error]` as JSON text, put together by the database: the
contents of all the rows read are then decoded in one parse (a 10,000-call source spent
most of its derivation decoding, and building, them a row at a time)."""


def _contents(rows: Sequence[Any]) -> list[Any]:
    """The `_CONTENTS` (each row's last column) of all the rows, decoded in one parse."""
    contents: list[Any] = json_text.parse("[" + ",".join(row[-1] for row in rows) + "]")
    return contents


def _recorded_calls(rows: Sequence[Any]) -> list[RecordedCall]:
    """Rows of `_LISTED` and `_CONTENTS` as calls."""
    calls = []
    for row, (inputs, result, error) in zip(rows, _contents(rows), strict=True):
        (sequence, invocation_id, agent_id, is_delegate, tool, call_id, status,
         served_by, duration_ms, _) = row  # fmt: skip
        call = RecordedCall(
            sequence, invocation_id, agent_id, is_delegate, tool, call_id,
            inputs, status, result, error, served_by, duration_ms,
        )  # fmt: skip
        calls.append(call)
    return calls


_NOT_HELD = or_(
    tool_calls.c.recorded.is_(False),
    tool_calls.c.erased_at.is_not(None),
    tool_calls.c.status == "unknown",
)
"""A call whose content or outcome the record lacks: its agent's `record` was off, it was
erased since, or its outcome never reached the record."""


class _JsonString(FunctionElement[str]):
    """A text column as a JSON string's text, written as `json_text.compact` writes it (only
    `"`, `\\` and the control characters escaped, these as `\\b`, `\\t`, `\\n`, `\\f`, `\\r`
    or `\\u00xx`): SQLite's `json_quote` and PostgreSQL's `to_json` both do."""

    type = Text()
    inherit_cache = True


@compiles(_JsonString)
def _json_quote(element: _JsonString, compiler: SQLCompiler, **kw: Any) -> str:
    return f"json_quote({compiler.process(element.clauses, **kw)})"


@compiles(_JsonString, "postgresql")
def _to_json(element: _JsonString, compiler: SQLCompiler, **kw: Any) -> str:
    return f"CAST(to_json({compiler.process(element.clauses, **kw)}) AS TEXT)"


def _text(value: str) -> ColumnElement[str]:
    return literal(value, Text)


_DOCUMENT = (
    # RFC 0252 §D, as `evals.derive_fixture_documents` states it (the two are held byte for
    # byte by tests/engine/test_derive_documents.py): "`tool` is the call's toolName; `args`
    # is the call's inputs as the agent passed them, with `argsMatch: "exact"`; `response`
    # is its result." The contents are copied as the JSON text they are stored as.
    _text('{"tool":')
    + _JsonString(tool_calls.c.tool)
    + _text(',"args":')
    + _json_text(tool_calls.c.inputs)
    + _text(',"argsMatch":"exact","response":')
    + case(
        (tool_calls.c.status == "ok", _json_text(tool_calls.c.result) + _text("}")),
        # "A call that failed, or never ran (`forbidden` or `rate_limited`), yields
        # `isError: true` with its error as `response`." A record without an error object
        # still carries its status as the code, so the agent sees a failure.
        (
            _json_text(tool_calls.c.error) == "null",
            _text('{"code":"') + tool_calls.c.status + _text('"},"isError":true}'),
        ),
        else_=_json_text(tool_calls.c.error) + _text(',"isError":true}'),
    )
).label("document")
"""An own call's `toolResponses` document as JSON text, written by the database: a
10,000-call source read into Python and written again there spent most of a create."""

_RUN_OF = itemgetter(0)
_DOCUMENT_OF = itemgetter(1)


_COMPLETE = (
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
"""A live call's outcome, built once: every live call lands one."""


_APPEND = tool_calls.insert()
"""Built once: the run log writer inserts through it in every transaction it writes."""


class ToolCallsRepo:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def append(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Insert `ToolCallRow.to_row`'s rows."""
        await _driver.insert_many(self._connection, _APPEND, _COLUMNS, rows, written=True)

    async def complete(self, outcomes: Sequence[tuple[str, int, ToolCallOutcome]]) -> None:
        """Give live calls, keyed by run and `agent.tool-called` sequence, their outcome."""
        if not outcomes:
            return
        await _driver.execute_many(
            self._connection,
            _COMPLETE,
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

    async def derive(
        self, sources: Collection[RunHandle], agent_id: str
    ) -> dict[str, DerivedSource]:
        """Per run id, what the agent's calls in it derive to (RFC 0252 §C–§D), the documents
        written by the database; one query for the documents of all the runs (an eval names
        up to a source per task) and one for their facts."""
        run_ids = [source.run_id for source in sources]
        if not run_ids:
            return {}
        of_agent = and_(tool_calls.c.run_id.in_(run_ids), tool_calls.c.agent_id == agent_id)
        # RFC 0252 §D: calls "of the eval's agentId, excluding delegates", in sequence order.
        own = tool_calls.c.is_delegate.is_(False)
        documents = await _driver.select_rows(
            self._connection,
            select(tool_calls.c.run_id, _DOCUMENT)
            .where(and_(of_agent, own))
            .order_by(tool_calls.c.run_id, tool_calls.c.sequence),
        )
        facts = await _driver.select_rows(
            self._connection,
            select(
                tool_calls.c.run_id,
                func.count().filter(_NOT_HELD),
                # RFC 0252 §C: a failed tool call is any own call not `ok`.
                func.count().filter(and_(own, tool_calls.c.status != "ok")),
            )
            .where(of_agent)
            .group_by(tool_calls.c.run_id),
        )
        texts = {
            run_id: f"[{','.join(map(_DOCUMENT_OF, rows))}]"
            for run_id, rows in groupby(documents, key=_RUN_OF)
        }
        derived = {run_id: DerivedSource("[]", True, False) for run_id in run_ids}
        for run_id, not_held, failed in facts:
            derived[run_id] = DerivedSource(texts.get(run_id, "[]"), not not_held, bool(failed))
        return derived

    async def page(self, run: RunHandle, *, after: int, limit: int) -> list[RecordedCall]:
        """Every agent's calls in the run after sequence `after`, in order, at most `limit`."""
        result = await self._connection.execute(
            select(*_LISTED, _CONTENTS)
            .where(and_(tool_calls.c.run_id == run.run_id, tool_calls.c.sequence > after))
            .order_by(tool_calls.c.sequence)
            .limit(limit)
        )
        return _recorded_calls(result.all())

    async def still_held(self, run_ids: Collection[str], agent_id: str) -> bool:
        """Whether the agent's calls in the runs still hold their content. A copy asks under
        its share lock on the runs (`RunsRepo.hold`), which no erasure passes. Only the count
        of rows not held comes back."""
        if not run_ids:
            return True
        result = await self._connection.execute(
            select(func.count()).where(
                and_(
                    tool_calls.c.run_id.in_(list(run_ids)),
                    tool_calls.c.agent_id == agent_id,
                    _NOT_HELD,
                )
            )
        )
        return int(result.scalar_one()) == 0

    async def erase(
        self, run_id: str, at: datetime, erased_error: Callable[[Any], dict[str, Any] | None]
    ) -> int:
        """Erase the run's calls still held: args and result go, each error becomes what
        `erased_error` (the erasure rule, engine/runs/erasure.py) keeps of it. Returns how many."""
        held = and_(tool_calls.c.run_id == run_id, tool_calls.c.erased_at.is_(None))
        errors = await self._connection.execute(
            select(tool_calls.c.sequence, tool_calls.c.error).where(held)
        )
        kept = {row.sequence: erased_error(row.error) for row in errors if row.error is not None}
        result = await self._connection.execute(
            update(tool_calls)
            .where(held)
            .values(inputs=None, result=None, error=None, erased_at=at)
        )
        for sequence, error in kept.items():
            await self._connection.execute(
                update(tool_calls)
                .where(and_(tool_calls.c.run_id == run_id, tool_calls.c.sequence == sequence))
                .values(error=error)
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

    async def count_live(self, run: RunHandle) -> int:
        result = await self._connection.execute(
            select(func.count())
            .select_from(tool_calls)
            .where(and_(tool_calls.c.run_id == run.run_id, tool_calls.c.served_by == "live"))
        )
        return int(result.scalar_one())

    async def copy(self, source: RunHandle, target_run_id: str) -> None:
        """Give a replay the record of the run it re-emits (same content, same erasure)."""
        await copy_rows(self._connection, tool_calls, source.run_id, target_run_id)
