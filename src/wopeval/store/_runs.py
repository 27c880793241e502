"""The runs aggregate: one row per run, always read through the caller's tenant (G9)."""

from __future__ import annotations

import base64
import binascii
import functools
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, TypeVar, final

from pydantic import BaseModel, JsonValue
from sqlalchemy import (
    ColumnElement,
    TextClause,
    Update,
    and_,
    bindparam,
    exists,
    func,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.engine import RowMapping
from sqlalchemy.ext.asyncio import AsyncConnection

import wopeval.store._driver as _driver
from wopeval.store._plan import StoredPlan
from wopeval.store.tables import run_plans, runs
from wopeval.wire import errors, events, limits
from wopeval.wire.json_text import JsonObject
from wopeval.wire.runs import CreateRunRequest, IdleAgent, RunKind, RunOwner, RunStatus
from wopeval.wire.summary import EvalSummary

_ACTIVE = [s.value for s in RunStatus if not s.is_terminal]
RUN_CHANNEL = "wopeval_run"
"""The NOTIFY channel a commit to a run's log is announced on; the payload is the run id."""
_GET = select(runs).where(
    runs.c.tenant == bindparam("tenant"), runs.c.run_id == bindparam("run_id")
)
"""One run's row, built once: a run's watchers read it many times a second."""
_last_created_seq = 0


def utc(at: datetime) -> datetime:
    """SQLite returns naive datetimes, PostgreSQL the session's zone; stored times are UTC."""
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def aware(at: datetime | None) -> datetime | None:
    return None if at is None else utc(at)


def next_created_seq() -> int:
    """Strictly increasing in this process, and ordered by wall time across restarts."""
    global _last_created_seq
    _last_created_seq = max(_last_created_seq + 1, time.time_ns())
    return _last_created_seq


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    tenant: str
    kind: RunKind
    workflow_id: str
    status: RunStatus
    owner: RunOwner
    request: CreateRunRequest
    """The createRun body as the run was created with it (a fork: its source's)."""
    plan: StoredPlan | None
    """An eval run's plan as it is created; a record read back leaves it None (the plan is
    kept apart from the row, `RunsRepo.plan` reads it)."""
    created_at: datetime
    started_at: datetime | None
    completed_at: datetime | None
    error: events.RunErrorInfo | None
    """A failed run's error (the snapshot's `error`, the `run.failed` payload's)."""
    outputs: JsonObject | None
    """A completed run's outputs, as its workflow or agents made them."""
    summary: EvalSummary | None
    suite_id: str | None
    agent_ids: list[str] = field(default_factory=list)
    last_sequence: int = -1
    parent_run_id: str | None = None
    created_seq: int = 0
    cancel_reason: str | None = None
    catalog_digest: str | None = None
    """The project catalog the run was created under (engine/catalog/catalog_digest.py)."""
    landed_trials: int = 0
    idle: list[IdleAgent] | None = None
    """A completed workflow run's agents that recorded nothing a replay could test
    (evals/_idle.py); None: none."""

    @classmethod
    def from_row(cls, row: RowMapping) -> RunRecord:
        return cls(
            run_id=row["run_id"],
            tenant=row["tenant"],
            kind=RunKind(row["kind"]),
            workflow_id=row["workflow_id"],
            status=RunStatus(row["status"]),
            owner=RunOwner.model_validate(row["owner"]),
            request=CreateRunRequest.model_validate(row["request"]),
            plan=None,
            created_at=utc(row["created_at"]),
            started_at=aware(row["started_at"]),
            completed_at=aware(row["completed_at"]),
            error=_read(events.RunErrorInfo, row["error"]),
            outputs=row["outputs"],
            summary=_read(EvalSummary, row["summary"]),
            suite_id=row["suite_id"],
            agent_ids=list(row["agent_ids"]),
            last_sequence=row["last_sequence"],
            parent_run_id=row["parent_run_id"],
            created_seq=row["created_seq"],
            cancel_reason=row["cancel_reason"],
            catalog_digest=row["catalog_digest"],
            landed_trials=row["landed_trials"],
            idle=None
            if row["idle"] is None
            else [IdleAgent.model_validate(i) for i in row["idle"]],
        )

    def to_row(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "tenant": self.tenant,
            "kind": self.kind.value,
            "workflow_id": self.workflow_id,
            "status": self.status.value,
            "owner": self.owner.model_dump(mode="json"),
            "request": self.request.model_dump(mode="json", exclude_none=True),
            "created_at": self.created_at,
            "started_at": self.started_at,
            "completed_at": self.completed_at,
            "error": None if self.error is None else self.error.to_wire(),
            "outputs": self.outputs,
            "summary": None if self.summary is None else self.summary.to_wire(),
            "suite_id": self.suite_id,
            "agent_ids": self.agent_ids,
            "last_sequence": self.last_sequence,
            "parent_run_id": self.parent_run_id,
            "created_seq": self.created_seq,
            "cancel_reason": self.cancel_reason,
            "catalog_digest": self.catalog_digest,
            "landed_trials": self.landed_trials,
            "idle": idle_column(self.idle),
        }


Part = TypeVar("Part", bound=BaseModel)


def _read(part: type[Part], column: JsonObject | None) -> Part | None:
    return None if column is None else part.model_validate(column)


def idle_column(idle: list[IdleAgent] | None) -> list[JsonValue] | None:
    """The `idle` column as stored: `[{agentId, nodeId, reasons}]`."""
    return None if idle is None else [agent.model_dump(mode="json") for agent in idle]


class _Issuer:
    """The store's seal on a run handle. Its one instance, `_ISSUER`, is private to this
    module: code outside the store cannot pass one (mypy refuses the call), so a handle
    exists only where the store has read the run with its tenant
    (tests/unit/test_run_handles.py also refuses any mention of these names elsewhere)."""


_ISSUER: Final = _Issuer()


@final
class RunHandle:
    """Leave to read one run's content (its events, tool calls, model exchanges,
    invocations, trial details, listings, plan and derived copies).

    Every content read of the store takes one, never a bare run id, so a read that skipped
    the ownership check does not type-check. Only the store issues them: `RunsRepo.get`
    and `states` for the caller's tenant, `lock` for the log writer's locked row, and
    `for_host` and `active` for the host acting on its own account.
    """

    __slots__ = ("run_id", "tenant")

    def __init__(self, tenant: str, run_id: str, issuer: _Issuer) -> None:
        if issuer is not _ISSUER:
            raise TypeError("run handles are issued by the store's ownership check only")
        self.tenant: Final = tenant
        self.run_id: Final = run_id

    def __repr__(self) -> str:
        return f"RunHandle({self.run_id!r})"


@final
class OwnedRun(RunRecord):
    """A run's record as the store read it for its tenant, with the handle to its content.

    Not a dataclass of its own: `dataclasses.replace` refuses one (its constructor wants
    the store's seal), so no copy of it can name another run; `as_record` is the plain copy
    a new run is made from."""

    __slots__ = ("handle",)
    handle: RunHandle

    def __init__(self, record: RunRecord, issuer: _Issuer) -> None:
        # The fields as they are, without running the record's __init__ again (a hot read).
        self.__dict__.update(vars(record))
        object.__setattr__(self, "handle", RunHandle(record.tenant, record.run_id, issuer))

    def as_record(self) -> RunRecord:
        return RunRecord(**vars(self))


@dataclass(frozen=True, slots=True)
class OwnedStatus:
    """One of a tenant's runs as `RunsRepo.states` finds it: its handle and its status."""

    handle: RunHandle
    status: RunStatus


@dataclass(frozen=True, slots=True)
class LockedRun:
    """A run row as read under its lock, for a step that decides what lands (a fence)."""

    run_id: str
    tenant: str
    status: RunStatus
    last_sequence: int
    landed_trials: int
    handle: RunHandle
    """The run's content, as the writer that locked it reads it (its trials, its log)."""


@dataclass(frozen=True, slots=True)
class RunMove:
    """How far one step group moves its run's row: sequences taken, trials landed."""

    tenant: str
    run_id: str
    events: int
    trials: int


@dataclass(frozen=True)
class RunFilter:
    """Which runs a listing keeps: every member given must hold (None keeps all)."""

    workflow_id: str | None = None
    status: str | None = None
    kind: str | None = None
    suite_id: str | None = None
    suite_version: str | None = None
    """The version of the suite an eval run ran, as its plan keeps it."""
    tag: str | None = None
    """One of the run's `tags`."""
    agent_id: str | None = None
    """The eval run's `agentId`, or an agent the run invoked."""
    created_from: datetime | None = None
    """Created at or after."""
    created_before: datetime | None = None
    """Created strictly before."""


def encode_cursor(created_seq: int) -> str:
    return base64.urlsafe_b64encode(f"v1:{created_seq}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raw = ""
    prefix, _, value = raw.partition(":")
    # Minted values are plain decimals that fit `created_seq` (BIGINT on both stores).
    minted = prefix == "v1" and value.isascii() and value.isdigit()
    if not minted or len(value) > limits.INT64_MAX_DIGITS or int(value) > limits.INT64_MAX:
        raise errors.ValidationFailed(
            "cursor was not minted by this host.", details={"field": "cursor"}
        )
    return int(value)


_INSERT = runs.insert()
_RUN_COLUMNS = tuple(column.name for column in runs.columns)
_INSERT_PLAN = run_plans.insert()
_PLAN_COLUMNS = ("run_id", "plan")


class RunsRepo:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def insert(self, record: RunRecord) -> None:
        # One statement made once a process (`insert_many`'s), the row its values in the
        # table's order: SQLAlchemy's own compiled form is made once an engine (a host).
        row = record.to_row()
        values = tuple(row[name] for name in _RUN_COLUMNS)
        await _driver.insert_many(self._connection, _INSERT, _RUN_COLUMNS, [values])
        if record.plan is not None:
            # Its text written here, as the column's codec would (`StoredPlan.written`).
            plan = (record.run_id, record.plan.written())
            await _driver.insert_many(
                self._connection, _INSERT_PLAN, _PLAN_COLUMNS, [plan], written=True
            )

    async def get(self, tenant: str, run_id: str) -> OwnedRun | None:
        """The tenant's run: the ownership check every read of its content starts from."""
        result = await self._connection.execute(_GET, {"tenant": tenant, "run_id": run_id})
        row = result.mappings().first()
        return OwnedRun(RunRecord.from_row(row), _ISSUER) if row else None

    async def for_host(self, run_id: str, *, lock: bool = False) -> OwnedRun | None:
        """HOST SCOPE: the run, whichever tenant owns it. Only for the host acting on its own
        account, never for a request: erasure, whose cascade follows an erased run's content
        into every run that copied it, and retention's purge, which erases runs of every
        tenant.

        `lock` (erasure's) locks the row FOR UPDATE until the transaction ends: it waits for
        every copy still being taken from the run (`hold`), and the erasure then finds that
        copy committed and erases it too."""
        query = select(runs).where(runs.c.run_id == run_id)
        result = await self._connection.execute(query.with_for_update() if lock else query)
        row = result.mappings().first()
        return OwnedRun(RunRecord.from_row(row), _ISSUER) if row else None

    async def hold(self, tenant: str, run_ids: Collection[str]) -> None:
        """Share-lock the rows of the tenant's runs that a copy is taken from until the
        transaction ends (runs are never deleted: only their content is erased).

        On PostgreSQL the lock (FOR SHARE on the run rows themselves: one inside a filtered or
        aggregated query may lock no row at all) makes an erasure of these runs, which locks
        them first (`for_host`), wait until the copy commits; the erasure then reaches the
        copy. SQLite serialises its writers: an erasure never overlaps a copy there."""
        if run_ids:
            await self._connection.execute(
                select(runs.c.run_id)
                .where(and_(runs.c.tenant == tenant, runs.c.run_id.in_(sorted(run_ids))))
                .with_for_update(read=True)
            )

    async def states(self, tenant: str, run_ids: Collection[str]) -> dict[str, OwnedStatus]:
        """The status of each of the tenant's runs among `run_ids` (those it has), in one
        query: only the status, for a source's request may hold a whole task's input."""
        if not run_ids:
            return {}
        result = await self._connection.execute(
            select(runs.c.run_id, runs.c.status).where(
                and_(runs.c.tenant == tenant, runs.c.run_id.in_(list(run_ids)))
            )
        )
        return {
            run_id: OwnedStatus(RunHandle(tenant, run_id, _ISSUER), RunStatus(status))
            for run_id, status in result
        }

    async def plan(self, run: RunHandle) -> StoredPlan | None:
        result = await self._connection.execute(
            select(run_plans.c.plan).where(run_plans.c.run_id == run.run_id)
        )
        return _read(StoredPlan, result.scalar_one_or_none())

    async def page(
        self,
        tenant: str,
        *,
        limit: int,
        before_seq: int | None,
        where: RunFilter = RunFilter(),
    ) -> list[RunRecord]:
        """The tenant's runs newest first, created before the cursor's `before_seq`."""
        query = select(runs).where(runs.c.tenant == tenant, *self._conditions(where))
        if before_seq is not None:
            query = query.where(runs.c.created_seq < before_seq)
        query = query.order_by(runs.c.created_seq.desc()).limit(limit)
        result = await self._connection.execute(query)
        return [RunRecord.from_row(row) for row in result.mappings()]

    def _conditions(self, where: RunFilter) -> list[ColumnElement[bool]]:
        equal = {
            runs.c.workflow_id: where.workflow_id,
            runs.c.status: where.status,
            runs.c.kind: where.kind,
            runs.c.suite_id: where.suite_id,
        }
        conditions = [column == value for column, value in equal.items() if value is not None]
        if where.suite_version is not None:
            conditions.append(
                exists().where(
                    run_plans.c.run_id == runs.c.run_id,
                    run_plans.c.plan[("suite", "version")].as_string() == where.suite_version,
                )
            )
        if where.tag is not None:
            conditions.append(self._array_holds("request", "tags", where.tag))
        if where.agent_id is not None:
            conditions.append(
                or_(
                    runs.c.request["agentId"].as_string() == where.agent_id,
                    self._array_holds("agent_ids", None, where.agent_id),
                )
            )
        if where.created_from is not None:
            conditions.append(runs.c.created_at >= where.created_from)
        if where.created_before is not None:
            conditions.append(runs.c.created_at < where.created_before)
        return conditions

    def _array_holds(self, column: str, member: str | None, value: str) -> ColumnElement[bool]:
        """Whether the JSON array in `column` (or in its `member`) holds the string `value`.

        SQL has no portable way to look inside a JSON array: each backend's own
        table function lists its elements.
        """
        document = runs.c[column]
        if self._connection.dialect.name == "postgresql":
            array = document if member is None else document[member]
            elements = func.json_array_elements_text(array).table_valued("value")
        else:
            path = "$" if member is None else f"$.{member}"
            elements = func.json_each(document, path).table_valued("value")
        return exists(select(1).select_from(elements).where(elements.c.value == value))

    async def advance(
        self,
        tenant: str,
        run_id: str,
        *,
        count: int,
        allowed_from: Collection[RunStatus],
        status: RunStatus | None,
        values: dict[str, Any],
        trials: int = 0,
    ) -> int | None:
        """Take `count` sequences for a run in one of `allowed_from`; None if it is in none.

        Returns the run's new last sequence: the taken ones end there. The update
        locks the row until the caller's transaction ends, so the sequences of
        concurrent writers never interleave and a state test cannot go stale.
        `trials` eval trials land with the step and are counted in `landed_trials`.
        """
        parameters: dict[str, Any] = {
            "key_tenant": tenant,
            "key_run_id": run_id,
            "allowed_from": [state.value for state in allowed_from],
            "count": count,
            **{f"new_{name}": value for name, value in values.items()},
        }
        if trials:
            parameters["trials"] = trials
        if status is not None:
            parameters["new_status"] = status.value
        statement = _advance_statement(tuple(sorted(values)), bool(trials), status is not None)
        result = await self._connection.execute(statement, parameters)
        last: int | None = result.scalar_one_or_none()
        return last

    async def advance_each(
        self, moves: list[RunMove], allowed_from: Collection[RunStatus]
    ) -> dict[str, int]:
        """`advance` for several runs in one statement, each by its own counts, with no
        other change: the new last sequence of each run that is in one of `allowed_from`;
        a run that is not is absent."""
        states = sorted(state.value for state in allowed_from)
        statement = _advance_each_statement(len(moves), len(states))
        rows = await _driver.fetch(self._connection, statement, _moved(moves, states))
        return {run_id: last_sequence for run_id, last_sequence in rows}

    def advance_known(
        self, moves: list[RunMove], known: Mapping[str, int], allowed_from: Collection[RunStatus]
    ) -> None:
        """`advance_each` for runs whose last sequence the caller knows (`known`, by run id:
        where its own last commit left each row), with nothing read back: each row moves to
        its known last sequence plus its events if it is still there and in one of
        `allowed_from`. The caller numbers the events from what it knows.

        A row found elsewhere (another writer moved it, or its state changed) fails the
        whole transaction with `StaleRun`, and nothing of it is written. In a pipelined
        PostgreSQL transaction (store/_pg_batch.py `Batch`) the statement is held and checked
        by the server, so the move costs no round trip of its own. On SQLite it runs at once
        and the rows it changed are counted here: SQLite's RETURNING, which `advance_each`
        reads the rows back by, cost a live call's group as much again as the UPDATE."""
        states = sorted(state.value for state in allowed_from)
        values = _moved(moves, states)
        values |= {f"known_{index}": known[move.run_id] for index, move in enumerate(moves)}
        if self._connection.dialect.name == "sqlite":
            statement = _advance_known_sqlite(len(moves), len(states))
            _driver.run_checked(self._connection, statement, values, len(moves))
            return
        statement = _advance_known_statement(len(moves), len(states))
        _driver.hold_checked(self._connection, statement, values, len(moves))

    async def lock(
        self, tenant: str, run_id: str, allowed_from: Collection[RunStatus]
    ) -> LockedRun | None:
        """Lock the run's row until the transaction ends, if it is in one of `allowed_from`."""
        result = await self._connection.execute(
            select(runs.c.status, runs.c.last_sequence, runs.c.landed_trials)
            .where(
                and_(
                    runs.c.tenant == tenant,
                    runs.c.run_id == run_id,
                    runs.c.status.in_([state.value for state in allowed_from]),
                )
            )
            .with_for_update()
        )
        row = result.first()
        if row is None:
            return None
        return LockedRun(
            run_id,
            tenant,
            RunStatus(row.status),
            row.last_sequence,
            row.landed_trials,
            RunHandle(tenant, run_id, _ISSUER),
        )

    async def notify(self, run_ids: Collection[str]) -> None:
        """Wake the readers of these runs in every process (PostgreSQL NOTIFY, sent at commit,
        so a reader woken by it finds the rows); SQLite has no other process to wake."""
        if run_ids and self._connection.dialect.name == "postgresql":
            await self._connection.execute(
                text("SELECT pg_notify(:channel, run_id) FROM unnest(CAST(:ids AS text[])) run_id"),
                {"channel": RUN_CHANNEL, "ids": sorted(run_ids)},
            )

    async def statuses(self, run_ids: Collection[str]) -> dict[str, RunStatus]:
        """The status of each of these runs (ids are tenant-bound; a queue worker's read)."""
        result = await self._connection.execute(
            select(runs.c.run_id, runs.c.status).where(runs.c.run_id.in_(list(run_ids)))
        )
        return {row.run_id: RunStatus(row.status) for row in result}

    async def active(self) -> list[OwnedRun]:
        """HOST SCOPE: runs left active by a host that stopped; only start-up recovery reads
        across tenants (it ends each run with what its log says it invoked)."""
        result = await self._connection.execute(select(runs).where(runs.c.status.in_(_ACTIVE)))
        return [OwnedRun(RunRecord.from_row(row), _ISSUER) for row in result.mappings()]

    async def children(self, tenant: str, run_id: str) -> list[str]:
        """Runs replayed from `run_id`."""
        result = await self._connection.execute(
            select(runs.c.run_id).where(
                and_(runs.c.tenant == tenant, runs.c.parent_run_id == run_id)
            )
        )
        return list(result.scalars())


def _moved(moves: list[RunMove], states: list[str]) -> dict[str, Any]:
    """The values of a statement that moves `moves`' rows from one of `states`, by index
    (`_advance_each_statement`, `_advance_known_statement`)."""
    values: dict[str, Any] = {f"state_{index}": state for index, state in enumerate(states)}
    for index, move in enumerate(moves):
        values |= {
            f"tenant_{index}": move.tenant,
            f"run_{index}": move.run_id,
            f"count_{index}": move.events,
            f"trials_{index}": move.trials,
        }
    return values


@functools.cache
def _advance_statement(columns: tuple[str, ...], trials: bool, status: bool) -> Update:
    """`RunsRepo.advance`'s UPDATE for one shape of change, built once: every step of a
    live call lands through it, and building the statement anew cost more than running it."""
    changes: dict[str, Any] = {
        "last_sequence": runs.c.last_sequence + bindparam("count"),
        **{name: bindparam(f"new_{name}", type_=runs.c[name].type) for name in columns},
    }
    if trials:
        changes["landed_trials"] = runs.c.landed_trials + bindparam("trials")
    if status:
        changes["status"] = bindparam("new_status")
    return (
        update(runs)
        .where(
            and_(
                runs.c.tenant == bindparam("key_tenant"),
                runs.c.run_id == bindparam("key_run_id"),
                runs.c.status.in_(bindparam("allowed_from", expanding=True)),
            )
        )
        .values(changes)
        .returning(runs.c.last_sequence)
    )


@functools.cache
def _advance_each_statement(runs_count: int, states_count: int) -> TextClause:
    """`RunsRepo.advance_each`'s UPDATE for that many runs and allowed states, built once.

    Plain SQL (valid on SQLite and PostgreSQL): an expression tree of this size costs
    more to build and to key for the statement cache at each execution than the
    UPDATE costs to run."""
    moved = _cased_move(runs_count, states_count, checked=False)
    return text(f"{moved} RETURNING run_id, last_sequence")


@functools.cache
def _advance_known_sqlite(runs_count: int, states_count: int) -> str:
    """`RunsRepo.advance_known`'s UPDATE on SQLite for that many runs and allowed states,
    built once (named parameters, `_moved`'s and each run's `known_{index}`)."""
    return _cased_move(runs_count, states_count, checked=True)


def _cased_move(runs_count: int, states_count: int, *, checked: bool) -> str:
    """An UPDATE of that many runs' rows, each by its own counts, if in one of that many
    states; `checked`, each only if at its known last sequence too."""
    indexes = range(runs_count)
    counts = " ".join(f"WHEN :run_{i} THEN CAST(:count_{i} AS INTEGER)" for i in indexes)
    trials = " ".join(f"WHEN :run_{i} THEN CAST(:trials_{i} AS INTEGER)" for i in indexes)
    keys = " OR ".join(
        f"(tenant = :tenant_{i} AND run_id = :run_{i}"
        + (f" AND last_sequence = :known_{i})" if checked else ")")
        for i in indexes
    )
    states = ", ".join(f":state_{i}" for i in range(states_count))
    return (
        f"UPDATE runs SET last_sequence = last_sequence + CASE run_id {counts} ELSE 0 END,"
        f" landed_trials = landed_trials + CASE run_id {trials} ELSE 0 END"
        f" WHERE ({keys}) AND status IN ({states})"
    )


@functools.cache
def _advance_known_statement(runs_count: int, states_count: int) -> str:
    """`RunsRepo.advance_known`'s UPDATE for that many runs and allowed states, built once
    (pyformat: its values bound as the protocol's parameters, store/_pg_batch.py `Batch`).
    The runs are a VALUES list joined to their rows by key: the server plans it as an
    index lookup a run (checked with 64 runs against 100,000 rows), where `advance_each`'s
    CASE tests every run's branch for each row."""
    rows = ", ".join(
        f"(%(tenant_{i})s, %(run_{i})s, %(known_{i})s, %(count_{i})s, %(trials_{i})s)"
        for i in range(runs_count)
    )
    states = ", ".join(f"%(state_{i})s" for i in range(states_count))
    return (
        "UPDATE runs SET last_sequence = moved.known + moved.events,"
        " landed_trials = runs.landed_trials + moved.trials"
        f" FROM (VALUES {rows}) AS moved (tenant, run_id, known, events, trials)"
        " WHERE runs.tenant = moved.tenant AND runs.run_id = moved.run_id"
        f" AND runs.last_sequence = moved.known AND runs.status IN ({states})"
    )
