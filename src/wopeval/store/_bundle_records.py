"""The records a bundle carries for each run, and how one travels as a line of JSON.

Every table whose rows an eval reads back from a recorded run is one `RecordKind`
here; the exporter, the checks and the importer go through this list only, so a
new table of run records travels once it is added to `RUN_RECORDS`. Most belong
to one run; some a tenant keeps once for all its runs that name them (a tool
listing, by its digest), and travel with each run that names them. A row is
written with every column the table has, and read back against the importing
store's table: a column it does not have, a required one missing, or a value of
the wrong type refuses the bundle before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    Float,
    Integer,
    String,
    Table,
)
from sqlalchemy.types import TypeEngine

from wopeval import evals
from wopeval.store._runs import utc
from wopeval.store.tables import (
    derived_fixtures,
    events,
    invocations,
    model_calls,
    run_annotations,
    run_plans,
    run_tool_listings,
    runs,
    task_trials,
    tool_calls,
    tool_listings,
)


class BundleError(Exception):
    """The bundle cannot be written or read as asked; the message says why."""


@dataclass(frozen=True)
class RecordKind:
    """The rows of one table that belong to a run: one member of the run in a bundle."""

    table: Table
    run_column: str = "run_id"
    """The column naming the run a row belongs to."""
    named_by: Column[Any] | None = None
    """For a record the tenant keeps once (its key: `tenant` and this column's name),
    however many of its runs name it: the column of the run's records that names it.
    A run carries those it names; an import adds those the tenant does not hold."""
    digest: Callable[[dict[str, Any]], str] | None = None
    """For a record named by its content's digest: that digest, of a row."""

    @property
    def name(self) -> str:
        """The member's name: `runs/<hex id>/<name>.jsonl`."""
        return self.table.name


def _listing_digest(row: dict[str, Any]) -> str:
    # The server's name is no part of a listing's digest.
    return evals.ServerListing.from_document("", row["listing"]).digest


RUN_RECORDS: tuple[RecordKind, ...] = (
    RecordKind(runs),
    RecordKind(run_plans),
    RecordKind(events),
    RecordKind(tool_calls),
    RecordKind(invocations),
    RecordKind(model_calls),
    RecordKind(task_trials),
    # An eval run's copies of what it derived from its sources (tool and model fixtures).
    RecordKind(derived_fixtures, "eval_run_id"),
    # The MCP listings the run was offered (its tool contract), and the listings themselves.
    RecordKind(run_tool_listings),
    RecordKind(tool_listings, named_by=run_tool_listings.c.digest, digest=_listing_digest),
    # What reviewers said of the run (RFC 0056 §D: a flagged run travels with its notes).
    RecordKind(run_annotations),
)
"""Everything an eval reads of a recorded run: the run as a source (its state, event
log, tool and model exchanges, invocations, the tools it was offered), as a baseline
(its row and summary), and an eval run's own trial details and derived copies; and the
annotations people made of it."""


def exported(row: dict[str, Any]) -> dict[str, Any]:
    """A row as it travels: times in UTC ISO 8601, every other value as the store holds it."""
    return {name: utc(value).isoformat() if isinstance(value, datetime) else value
            for name, value in row.items()}  # fmt: skip


def restored(kind: RecordKind, row: object, where: str) -> dict[str, Any]:
    """A travelled row as `kind`'s table takes it, or `BundleError` naming what is wrong."""
    if not isinstance(row, dict):
        raise BundleError(f"{where}: a row is not a JSON object")
    unknown = sorted(set(row) - set(kind.table.c.keys()))
    if unknown:
        raise BundleError(f"{where}: {kind.name} has no column {', '.join(unknown)} here")
    values = {}
    for column in kind.table.c:
        if column.name in row:
            values[column.name] = _value(column, row[column.name], where)
        elif _required(column):
            raise BundleError(f"{where}: this {kind.name} row lacks {column.name}")
    return values


def primary_key(kind: RecordKind, row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row[column.name] for column in kind.table.primary_key.columns)


def _required(column: Column[Any]) -> bool:
    return not column.nullable and column.server_default is None and column.default is None


def _value(column: Column[Any], value: Any, where: str) -> Any:
    if value is None:
        if not column.nullable:
            raise BundleError(f"{where}: {column.table.name}.{column.name} is null")
        return None
    try:
        return _converted(column.type, value)
    except ValueError:
        raise BundleError(
            f"{where}: {column.table.name}.{column.name} is not a {column.type}: "
            f"{str(value)[:80]!r}"
        ) from None


def _converted(kind: TypeEngine[Any], value: Any) -> Any:
    """`value` as a column of type `kind` takes it; `ValueError` when it is not one."""
    if isinstance(kind, JSON):
        return value
    if isinstance(kind, DateTime) and isinstance(value, str):
        return utc(datetime.fromisoformat(value))
    if isinstance(kind, Boolean) and isinstance(value, bool):
        return value
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if isinstance(kind, Integer) and number and isinstance(value, int):
        return value
    if isinstance(kind, Float) and number:
        return float(value)
    if isinstance(kind, String) and isinstance(value, str) and _fits(kind, value):
        return value
    raise ValueError(value)


def _fits(kind: String, value: str) -> bool:
    return kind.length is None or len(value) <= kind.length
