"""PostgreSQL's floors under a live call, on psycopg's asyncio driver (bench/record_path.py).

The record-path bench's PostgreSQL anchor is synchronous psycopg committing two single-row
INSERTs a call. The host runs on the event loop through psycopg's `AsyncConnection`, and a
live call's two durable steps are each one pipelined transaction of the host's own
statements. These loops pay what the driver and the server cost for that, with no wopeval
code in them:

- `psycopg async, 2 autocommit INSERTs`: the sync anchor's loop on `AsyncConnection`;
- `psycopg async pipeline, the host's statements`: each step the statements a live call's
  step sends (captured from the host's batch, store/_pg_batch.py, at `7ef3974`): BEGIN,
  the run row's checked move, the event's INSERT, the tool call's INSERT (the call) or
  UPDATE (its return), COMMIT, in one `AsyncConnection.pipeline()` block (one sync, one
  round trip), unprepared, every int bound as a bigint as the host binds it;
- the same, its statements prepared (psycopg's `prepare_threshold=0`): what the server's
  parse and plan of them cost;
- `libpq pipeline, the host's statements`: the same statements sent as the host sends them,
  on psycopg's libpq connection (`PQsendQueryParams` each, one `pipeline_sync`, one flush)
  and read through psycopg's own wait, without its cursors;
- the same, prepared as the host prepares them (branch `pg-prepared`, store/_pg_batch.py
  `_Prepared`): each statement with values prepared under a name in the pipeline of its
  first use (the host's second), just before its execution, then run by its name
  (`PQsendQueryPrepared`);
- the same without BEGIN and COMMIT: the pipeline's implicit transaction, committed at its
  sync (what the two statements cost the server).

Each is timed per call (its two steps) over a fresh run row in the host's own migrated
tables (`runs`, `events`, `tool_calls`), checked after (the run row moved once a step,
its events and tool call rows all there) and its rows deleted.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NamedTuple

import psycopg
from psycopg import AsyncConnection, AsyncRawCursor, generators, pq
from psycopg.abc import PQGen
from psycopg.pq.abc import PGresult
from psycopg.types.numeric import Int8Dumper


class Timed(NamedTuple):
    """A floor's loop: each call's seconds, and the process's CPU seconds over the loop."""

    per_call: list[float]
    cpu_seconds: float


Step = Sequence[tuple[bytes, Sequence[Any]]]
"""A step's statements ($1-numbered) with their values."""

CHECKED_MOVE = (
    b"WITH changed AS (UPDATE runs SET last_sequence = moved.known + moved.events, "
    b"landed_trials = runs.landed_trials + moved.trials FROM (VALUES ($1, $2, $3, $4, $5)) "
    b"AS moved (tenant, run_id, known, events, trials) WHERE runs.tenant = moved.tenant "
    b"AND runs.run_id = moved.run_id AND runs.last_sequence = moved.known "
    b"AND runs.status IN ($6, $7, $8) RETURNING 1) SELECT CASE count(*) WHEN 1 THEN 0 "
    b"ELSE CAST('wopeval: checked statement changed rows: ' || count(*) AS integer) END "
    b"FROM changed"
)
INSERT_EVENT = (
    b"INSERT INTO events (run_id, sequence, type, doc) "
    b"VALUES ($1::VARCHAR, $2::INTEGER, $3::VARCHAR, $4::VARCHAR)"
)
INSERT_TOOL_CALL = (
    b"INSERT INTO tool_calls (run_id, sequence, invocation_id, agent_id, is_delegate, tool, "
    b"call_id, status, served_by, duration_ms, recorded, inputs, result, error) "
    b"VALUES ($1::VARCHAR, $2::INTEGER, $3::VARCHAR, $4::VARCHAR, $5, $6::VARCHAR, "
    b"$7::VARCHAR, $8::VARCHAR, $9::VARCHAR, $10::INTEGER, $11, $12::JSON, $13::JSON, "
    b"$14::JSON)"
)
UPDATE_TOOL_CALL = (
    b"UPDATE tool_calls SET status=$1::VARCHAR, duration_ms=$2::INTEGER, result=$3::JSON, "
    b"error=$4::JSON WHERE tool_calls.run_id = $5::VARCHAR AND tool_calls.sequence = $6::INTEGER"
)

TENANT = "bench"
AGENT = "bench.recorder"
TOOL = "bench:noop"
LIVE = ("cancelling", "paused", "running")


def event_doc(run_id: str, sequence: int, kind: str, payload: dict[str, Any]) -> str:
    """An event as the host stores it (the same keys and sizes)."""
    return json.dumps(
        {
            "eventId": secrets.token_hex(16),
            "runId": run_id,
            "type": kind,
            "payload": {"agentId": AGENT, "toolName": TOOL, **payload},
            "timestamp": "2026-12-04T19:45:44.488Z",
            "sequence": sequence,
            "schemaVersion": 1,
            "nodeId": "record",
        },
        separators=(",", ":"),
    )


def call_steps(run_id: str, invocation: str, index: int) -> tuple[Step, Step]:
    """Live call `index`'s two steps: its call (events 2i+1) and its return (2i+2)."""
    called, returned = 2 * index + 1, 2 * index + 2
    call_id = secrets.token_hex(16)
    inputs = json.dumps({"index": index})

    def move(known: int) -> tuple[bytes, Sequence[Any]]:
        return CHECKED_MOVE, (TENANT, run_id, known, 1, 0, *LIVE)

    call: Step = (
        move(called - 1),
        (
            INSERT_EVENT,
            (
                run_id,
                called,
                "agent.tool-called",
                event_doc(
                    run_id,
                    called,
                    "agent.tool-called",
                    {"callId": call_id, "inputs": {"index": index}},
                ),
            ),
        ),
        (
            INSERT_TOOL_CALL,
            (
                *(run_id, called, invocation, AGENT, False, TOOL, call_id, "unknown", "live"),
                *(None, True, inputs, "null", "null"),
            ),
        ),
    )
    outcome = {"callId": call_id, "status": "ok", "outcome": "ok", "durationMs": 0}
    back: Step = (
        move(returned - 1),
        (
            INSERT_EVENT,
            (
                run_id,
                returned,
                "agent.tool-returned",
                event_doc(run_id, returned, "agent.tool-returned", outcome),
            ),
        ),
        (UPDATE_TOOL_CALL, ("ok", 0, '"ok"', "null", run_id, called)),
    )
    return call, back


# ── the loops ────────────────────────────────────────────────────────


async def autocommit_inserts(connection: AsyncConnection[Any], calls: int) -> Timed:
    """The sync anchor's loop on the async driver: two single-row autocommit INSERTs a call."""
    await connection.execute(
        "CREATE TABLE anchor_async_events (run_id TEXT, sequence INTEGER, type TEXT, doc TEXT, "
        "PRIMARY KEY (run_id, sequence))"
    )
    per_call: list[float] = []
    cpu_started = time.process_time()
    try:
        for call in range(calls):
            begun = time.perf_counter()
            for sequence in (2 * call, 2 * call + 1):
                doc = event_doc("run_anchor", sequence, "agent.tool-called", {})
                await connection.execute(
                    "INSERT INTO anchor_async_events "
                    "VALUES ('run_anchor', %s, 'agent.tool-called', %s)",
                    (sequence, doc),
                )
            per_call.append(time.perf_counter() - begun)
        cpu_seconds = time.process_time() - cpu_started
        found = await (
            await connection.execute("SELECT count(*) FROM anchor_async_events")
        ).fetchone()
    finally:
        await connection.execute("DROP TABLE anchor_async_events")
    if found is None or found[0] != 2 * calls:
        raise RuntimeError(f"async anchor: {found} rows, want {2 * calls}")
    return Timed(per_call, cpu_seconds)


async def psycopg_pipeline(connection: AsyncConnection[Any], step: Step) -> None:
    """A step as one transaction in psycopg's pipeline: one sync, one round trip."""
    cursor = connection.cursor()
    async with connection.pipeline():
        await cursor.execute(b"BEGIN")
        for sql, values in step:
            await cursor.execute(sql, values)
        await cursor.execute(b"COMMIT")


BOOL = 16
INT8 = 20


def _text(value: Any) -> tuple[bytes | None, int]:
    """A value in the text format, with its type as the host binds it (ints as bigints;
    the rest typed by the statement's casts)."""
    if value is None:
        return None, 0
    if isinstance(value, bool):
        return (b"t" if value else b"f"), BOOL
    if isinstance(value, int):
        return str(value).encode(), INT8
    return value.encode(), 0


BEGIN: Step = ((b"BEGIN", ()),)
COMMIT: Step = ((b"COMMIT", ()),)


async def libpq_pipeline(connection: AsyncConnection[Any], step: Step) -> None:
    """A step as the host sends one: BEGIN, its statements and COMMIT, each by
    `PQsendQueryParams`, one `pipeline_sync`, one flush; the answers read through
    psycopg's wait."""
    answers = await _pipelined(connection, (*BEGIN, *step, *COMMIT))
    if answers[-1].command_status != b"COMMIT":
        raise RuntimeError(f"the step ended {answers[-1].command_status!r}")


async def libpq_pipeline_prepared(connection: AsyncConnection[Any], step: Step) -> None:
    """`libpq_pipeline` with each statement that has values prepared on this connection:
    under a name of its own, in the pipeline of its first use, then run by that name."""
    answers = await _pipelined(
        connection, (*BEGIN, *step, *COMMIT), _names.setdefault(connection, {})
    )
    if answers[-1].command_status != b"COMMIT":
        raise RuntimeError(f"the step ended {answers[-1].command_status!r}")


_names: dict[AsyncConnection[Any], dict[tuple[bytes, tuple[int, ...]], bytes]] = {}
"""Each connection's prepared statements, by text and parameter types, for
`libpq_pipeline_prepared`."""


async def libpq_pipeline_implicit(connection: AsyncConnection[Any], step: Step) -> None:
    """The same without BEGIN and COMMIT: the statements before a pipeline's sync are one
    implicit transaction, committed at the sync, before the server answers it."""
    await _pipelined(connection, step)


async def _pipelined(
    connection: AsyncConnection[Any],
    statements: Step,
    names: dict[tuple[bytes, tuple[int, ...]], bytes] | None = None,
) -> list[PGresult]:
    """`statements` in one pipeline, each sent with its values, or with `names` (prepared
    statements, filled as they are made) each by its name; every command's results."""
    pgconn = connection.pgconn
    commands = len(statements)
    pgconn.enter_pipeline_mode()
    try:
        for sql, values in statements:
            bound = [_text(value) for value in values]
            params = [value for value, _ in bound]
            types = tuple(oid for _, oid in bound)
            if names is None or not values:
                pgconn.send_query_params(sql, params, types)
                continue
            name = names.get((sql, types))
            if name is None:
                name = names[(sql, types)] = b"floor_%d" % len(names)
                pgconn.send_prepare(name, sql, types)
                commands += 1
            pgconn.send_query_prepared(name, params)
        pgconn.pipeline_sync()
        if pgconn.flush():
            await connection.wait(generators.send(pgconn))
        answers = await connection.wait(_answers(pgconn, commands))
    finally:
        pgconn.exit_pipeline_mode()
    for result in answers:
        if result.status == pq.ExecStatus.FATAL_ERROR:
            raise psycopg.errors.error_from_result(result)
    return answers


def _answers(pgconn: Any, statements: int) -> PQGen[list[PGresult]]:
    """psycopg's generator that reads a flushed pipeline's results, then its sync."""
    results: list[PGresult] = []
    for _ in range(statements):
        results.extend((yield from generators.fetch_many(pgconn)))
    yield from generators.fetch_many(pgconn)  # the sync
    return results


async def host_statements(
    connection: AsyncConnection[Any],
    calls: int,
    send: Callable[[AsyncConnection[Any], Step], Awaitable[None]],
) -> Timed:
    """`calls` live calls' two steps each, in a fresh run row; each call's seconds."""
    run_id = f"bench/floor-{secrets.token_hex(8)}"
    invocation = secrets.token_hex(16)
    await connection.execute(
        "INSERT INTO runs (run_id, tenant, kind, workflow_id, status, owner, request, "
        "created_at, agent_ids, last_sequence, created_seq) VALUES ($1, $2, 'workflow', "
        "'bench-record', 'running', '{}', '{}', now(), '[]', 0, 0)",
        (run_id, TENANT),
    )
    per_call: list[float] = []
    cpu_started = time.process_time()
    try:
        for index in range(calls):
            begun = time.perf_counter()
            call, back = call_steps(run_id, invocation, index)
            await send(connection, call)
            await send(connection, back)
            per_call.append(time.perf_counter() - begun)
        cpu_seconds = time.process_time() - cpu_started
        await check_floor(connection, run_id, calls)
    finally:
        for table in ("events", "tool_calls", "runs"):
            await connection.execute(f"DELETE FROM {table} WHERE run_id = $1", (run_id,))
    return Timed(per_call, cpu_seconds)


async def check_floor(connection: AsyncConnection[Any], run_id: str, calls: int) -> None:
    moved = await (
        await connection.execute("SELECT last_sequence FROM runs WHERE run_id = $1", (run_id,))
    ).fetchone()
    events = await (
        await connection.execute("SELECT count(*) FROM events WHERE run_id = $1", (run_id,))
    ).fetchone()
    done = await (
        await connection.execute(
            "SELECT count(*) FROM tool_calls WHERE run_id = $1 AND status = 'ok'", (run_id,)
        )
    ).fetchone()
    found = (moved and moved[0], events and events[0], done and done[0])
    if found != (2 * calls, 2 * calls, calls):
        raise RuntimeError(f"floor run {run_id}: (moved, events, ok calls) {found}")


# ── the floors ───────────────────────────────────────────────────────


async def measure_floors(dsn: str, calls: int) -> dict[str, Timed]:
    """Each floor's loop, by its name, one after another on a new connection."""
    measured: dict[str, Timed] = {}

    async def connect(prepare_threshold: int | None) -> AsyncConnection[Any]:
        connection = await AsyncConnection.connect(
            dsn, autocommit=True, prepare_threshold=prepare_threshold, cursor_factory=AsyncRawCursor
        )
        # The host binds every int as a bigint (store/_pg_batch.py `_binder`).
        connection.adapters.register_dumper(int, Int8Dumper)
        return connection

    async with await AsyncConnection.connect(dsn, autocommit=True) as plain:
        measured["psycopg async, 2 autocommit INSERTs"] = await autocommit_inserts(plain, calls)
    kinds: list[tuple[str, int | None, Callable[[AsyncConnection[Any], Step], Awaitable[None]]]] = [
        ("psycopg async pipeline, the host's statements", None, psycopg_pipeline),
        ("psycopg async pipeline, the host's statements prepared", 0, psycopg_pipeline),
        ("libpq pipeline, the host's statements", None, libpq_pipeline),
        ("libpq pipeline, the host's statements prepared", None, libpq_pipeline_prepared),
        ("libpq pipeline, the host's statements, no BEGIN/COMMIT", None, libpq_pipeline_implicit),
    ]
    for name, threshold, send in kinds:
        async with await connect(threshold) as connection:
            measured[name] = await host_statements(connection, calls, send)
    return measured


def floors(dsn: str, calls: int) -> dict[str, Timed]:
    return asyncio.run(measure_floors(dsn, calls))
