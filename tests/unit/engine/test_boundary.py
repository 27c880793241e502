"""The tool boundary: a live call is durable before its tool runs and its outcome before the
agent sees it; fixtures answer without running anything; tool failures become tool errors."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import JsonValue
from sqlalchemy import select

from _handles import handle_of
from wopeval import evals
from wopeval.agents import AgentRegistry, AgentSpec, PythonAgent, ToolCallError
from wopeval.engine.recording.boundary import Boundary, FixtureServer, LiveTransport, ToolCall
from wopeval.engine.recording.grants import InvocationGrants
from wopeval.engine.recording.invocation import Invocation, Where
from wopeval.engine.runlog.runlog import Journal, RunLog
from wopeval.store import Store
from wopeval.store.tables import tool_calls
from wopeval.tools import PythonTool, ToolContext, ToolFailure, ToolRegistry
from wopeval.wire.suite import ToolResponse

from ._store import TENANT, open_run, open_store, sequences, writer_for


async def _decide(context: object) -> JsonValue:
    return None


def _invocation(
    log: RunLog,
    boundary: Boundary,
    *,
    record: bool = True,
    grants: InvocationGrants[Invocation] | None = None,
) -> Invocation:
    spec = AgentSpec("agent", PythonAgent(_decide), "python", record=record)
    return Invocation(
        spec=spec,
        input=None,
        journal=Journal(log),
        boundary=boundary,
        agents=AgentRegistry(),
        where=Where(log.run_id),
        grants=grants,
    )


def _live(*tools: PythonTool, timeout: float = 5.0) -> LiveTransport:
    registry = ToolRegistry()
    for tool in tools:
        registry.add(tool)
    return LiveTransport(registry, ToolContext(tenant=TENANT, run_id="r"), timeout)


async def _recorded(store: Store, run_id: str, *columns: str) -> list[tuple[Any, ...]]:
    """`columns` of the run's tool call records (by default sequence, status and served
    by), in sequence order."""
    chosen = [tool_calls.c[name] for name in columns or ("sequence", "status", "served_by")]
    async with store.reading() as uow:
        rows = await uow.connection.execute(
            select(*chosen).where(tool_calls.c.run_id == run_id).order_by(tool_calls.c.sequence)
        )
        return [tuple(row) for row in rows]


async def test_a_live_call_is_durable_before_its_tool_runs_and_after_it(tmp_path: Path) -> None:
    async with open_store(tmp_path) as store:
        log = await open_run(writer_for(store))
        seen_while_running: list[object] = []

        async def effect(args: JsonValue) -> JsonValue:
            seen_while_running.append(await sequences(store, log.run_id))
            seen_while_running.append(await _recorded(store, log.run_id))
            return {"done": True}

        invocation = _invocation(log, Boundary(_live(PythonTool("t:effect", effect))))
        answer = await invocation.call_tool("t:effect", {"x": 1})
        # What the agent is handed has already landed: the call's return and its outcome.
        landed = await sequences(store, log.run_id)
        recorded = await _recorded(store, log.run_id)
        assert answer == {"done": True}
        assert seen_while_running == [
            [(0, "run.started"), (1, "agent.tool-called")],
            [(1, "unknown", "live")],
        ]
        assert landed[-1] == (2, "agent.tool-returned")
        assert recorded == [(1, "ok", "live")]


async def test_a_fixture_answer_runs_nothing_and_lands_with_its_unit(tmp_path: Path) -> None:
    async with open_store(tmp_path) as store:
        log = await open_run(writer_for(store))
        ran: list[JsonValue] = []

        async def effect(args: JsonValue) -> JsonValue:
            ran.append(args)
            return None

        entries = (ToolResponse(tool="t:effect", args={"x": 1}, response={"served": True}),)
        fixtures = FixtureServer(evals.FixtureCursor.of(entries, "fail"))
        invocation = _invocation(log, Boundary(_live(PythonTool("t:effect", effect)), fixtures))
        assert await invocation.call_tool("t:effect", {"x": 1}) == {"served": True}
        assert await sequences(store, log.run_id) == [(0, "run.started")]
        with pytest.raises(ToolCallError) as missed:
            await invocation.call_tool("t:effect", {"x": 2})
        assert missed.value.code == "fixture_miss"
        await invocation.journal.flush()
        assert ran == []
        assert invocation.shared.fixture_misses == 1
        assert await _recorded(store, log.run_id) == [(1, "ok", "fixture"), (3, "error", "fixture")]


def test_an_unmatched_call_under_on_miss_live_is_left_to_the_live_tools() -> None:
    fixtures = FixtureServer(evals.FixtureCursor.of((), "live"))
    assert fixtures.serve(ToolCall("t:any", {}, "c")) is None


def test_an_is_error_entry_is_served_as_the_tools_error() -> None:
    entry = ToolResponse(tool="t:any", response={"code": "quota", "message": "no"}, isError=True)
    served = FixtureServer(evals.FixtureCursor.of((entry,), "fail")).serve(
        ToolCall("t:any", {}, "c")
    )
    assert served is not None
    assert (served.status, served.error, served.served_by) == (
        "error",
        {"code": "quota", "message": "no"},
        "fixture",
    )


async def _raises(args: JsonValue) -> JsonValue:
    raise KeyError("boom")


async def _hangs(args: JsonValue) -> JsonValue:
    await asyncio.sleep(60)
    return None


async def _forbidden(args: JsonValue) -> JsonValue:
    raise ToolFailure("denied", "not allowed", status="forbidden")


async def _answers_a_set(args: JsonValue) -> JsonValue:
    return {"ids": {1, 2}}  # type: ignore[dict-item]


@pytest.mark.parametrize(
    ("tool", "expected"),
    [
        (PythonTool("t:raises", _raises), ("error", "tool_raised", False)),
        (PythonTool("t:hangs", _hangs), ("error", "tool_timeout", True)),
        (PythonTool("t:forbidden", _forbidden), ("forbidden", "denied", False)),
        (PythonTool("t:set", _answers_a_set), ("error", "tool_answer_not_json", False)),
    ],
)
async def test_tool_failures_become_tool_errors(
    tool: PythonTool, expected: tuple[str, str, bool]
) -> None:
    result = await _live(tool, timeout=0.05).handle(ToolCall(tool.name, {}, "c"))
    error = result.error or {}
    assert (result.status, error["code"], bool(error.get("retryable"))) == expected
    if result.status == "forbidden":
        assert result.duration_ms is None


async def test_an_unknown_tool_is_a_tool_error() -> None:
    result = await _live().handle(ToolCall("t:nobody", {}, "c"))
    assert (result.status, (result.error or {})["code"]) == ("error", "unknown_tool")


async def test_with_record_off_the_call_is_listed_without_content(tmp_path: Path) -> None:
    async with open_store(tmp_path) as store:
        log = await open_run(writer_for(store))

        async def effect(args: JsonValue) -> JsonValue:
            return {"secret": "kept out"}

        invocation = _invocation(log, Boundary(_live(PythonTool("t:e", effect))), record=False)
        await invocation.call_tool("t:e", {"in": 1})
        async with store.reading() as uow:
            row = (await uow.connection.execute(select(tool_calls))).mappings().one()
        assert (row["recorded"], row["inputs"], row["result"], row["status"]) == (
            False,
            None,
            None,
            "ok",
        )


async def _stored_payloads(store: Store, run_id: str) -> list[dict[str, JsonValue]]:
    async with store.reading() as uow:
        docs = await uow.events.all_docs(await handle_of(uow, run_id))
    return [json.loads(doc)["payload"] for doc in docs[1:]]


async def test_what_the_agent_changes_after_a_served_call_leaves_the_call_as_it_was_made(
    tmp_path: Path,
) -> None:
    async with open_store(tmp_path) as store:
        log = await open_run(writer_for(store))
        entries = (
            ToolResponse(tool="t:look", args={"q": 1}, response={"found": ["one"]}),
            ToolResponse(tool="t:look", args={"q": 2}, response={"found": ["two"]}),
        )
        fixtures = FixtureServer(evals.FixtureCursor.of(entries, "fail"))
        invocation = _invocation(log, Boundary(_live(), fixtures))
        args: dict[str, JsonValue] = {"q": 1}
        answer = await invocation.call_tool("t:look", args)
        # An agent that reuses its args and works on what it is handed, in place.
        args["q"] = 2
        assert isinstance(answer, dict)
        answer["found"].append("mine")  # type: ignore[union-attr]
        assert await invocation.call_tool("t:look", args) == {"found": ["two"]}
        await invocation.journal.flush()

        assert await _recorded(store, log.run_id, "inputs", "result") == [
            ({"q": 1}, {"found": ["one"]}),
            ({"q": 2}, {"found": ["two"]}),
        ]
        payloads = await _stored_payloads(store, log.run_id)
        assert [p.get("inputs") for p in payloads] == [{"q": 1}, None, {"q": 2}, None]
        assert [p.get("outcome") for p in payloads] == [
            None, {"found": ["one"]}, None, {"found": ["two"]}
        ]  # fmt: skip
        executed = invocation.shared.executed
        assert [(call.args, call.result) for call in executed] == [
            ({"q": 1}, {"found": ["one"]}),
            ({"q": 2}, {"found": ["two"]}),
        ]
        # The fixture itself serves the next trial (and the next eval) as the suite says.
        assert entries[0].response == {"found": ["one"]}


async def test_a_tool_that_changes_its_args_leaves_the_call_as_the_agent_made_it(
    tmp_path: Path,
) -> None:
    async with open_store(tmp_path) as store:
        log = await open_run(writer_for(store))

        async def consume(args: JsonValue) -> JsonValue:
            assert isinstance(args, dict)
            args.pop("q")
            return {"left": args}

        invocation = _invocation(log, Boundary(_live(PythonTool("t:consume", consume))))
        assert await invocation.call_tool("t:consume", {"q": 1}) == {"left": {}}
        assert await _recorded(store, log.run_id, "inputs", "result") == [({"q": 1}, {"left": {}})]
        assert [call.args for call in invocation.shared.executed] == [{"q": 1}]
