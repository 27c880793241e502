"""A call's args and answer are written once on their way through the tool boundary: the
text the copy was made through is the one its events and its record embed. The documents
and rows are byte for byte those the values written again give; a value redaction changed
never reaches a stored text through the text of the value before it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import JsonValue
from sqlalchemy import select

from _handles import handle_of
from wopeval import evals
from wopeval.agents import AgentRegistry, AgentSpec, PythonAgent
from wopeval.engine.recording import content
from wopeval.engine.recording.boundary import Boundary, FixtureServer, LiveTransport
from wopeval.engine.recording.invocation import Invocation, Where
from wopeval.engine.recording.redaction import REDACTED, Redactor, SecretSource
from wopeval.engine.runlog.log_writer import render
from wopeval.engine.runlog.runlog import Journal, RunLog
from wopeval.engine.runlog.steps import Staged
from wopeval.store import Store
from wopeval.store.tables import tool_calls
from wopeval.tools import PythonTool, ToolContext, ToolRegistry
from wopeval.wire import events, json_text
from wopeval.wire.suite import ToolResponse

from ._store import TENANT, open_run, open_store, writer_for

SECRET = "configured-secret-4f9a"
VALUES: list[JsonValue] = [
    None,
    0,
    -1.5e-300,
    2**63,
    'ünïcode \u2028 \x00 "quoted"',
    [1, [2.0, {"a": None}], True],
    {"z": 1, "a": {"nested": ["x", 0.1]}, "": False},
]


def test_the_text_a_value_is_copied_through_is_the_copy_written_again() -> None:
    for value in VALUES:
        copied, text = json_text.copy_with_text(value)
        assert copied == json_text.copy(value)
        assert text is not None
        assert text.decode() == json_text.compact(copied) == json_text.compact(value)
        assert json_text.written(value) == text


def test_a_value_only_the_standard_library_writes_has_no_text_to_embed() -> None:
    beyond: JsonValue = {"big": 2**70}
    assert json_text.copy_with_text(beyond) == (beyond, None)
    assert json_text.written(beyond) is None


def _document(built: events.Built) -> str:
    staged = Staged(built.TYPE, built.to_wire(), "2026-12-05T00:00:00.000Z", "node", "e1")
    staged.sequence = 7
    return render("run-1", staged)


def test_events_with_embedded_texts_are_the_documents_written_whole() -> None:
    for value in VALUES:
        text = json_text.written(value)
        called = content.tool_called("a", "t:x", "c1", value, "full")
        assert _document(content.tool_called("a", "t:x", "c1", value, "full", text)) == (
            _document(called)
        )
        returned = content.tool_returned("a", "t:x", "c1", "ok", value, None, 3, "full")
        embedded = content.tool_returned("a", "t:x", "c1", "ok", value, None, 3, "full", text)
        assert _document(embedded) == _document(returned)


async def _decide(context: object) -> JsonValue:
    return None


def _invocation(log: RunLog, boundary: Boundary) -> Invocation:
    return Invocation(
        spec=AgentSpec("agent", PythonAgent(_decide), "python"),
        input=None,
        journal=Journal(log),
        boundary=boundary,
        agents=AgentRegistry(),
        where=Where(log.run_id),
    )


def _live(*tools: PythonTool) -> LiveTransport:
    registry = ToolRegistry()
    for tool in tools:
        registry.add(tool)
    redactor = Redactor((SecretSource(value=SECRET),))
    return LiveTransport(registry, ToolContext(tenant=TENANT, run_id="r"), 5.0, redactor=redactor)


async def _stored(store: Store, run_id: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The run's event documents and its tool calls' `(inputs, result)`, as stored."""
    async with store.reading() as uow:
        logged = await uow.events.read(await handle_of(uow, run_id), after=-1)
        rows = await uow.connection.execute(
            select(tool_calls.c.inputs, tool_calls.c.result)
            .where(tool_calls.c.run_id == run_id)
            .order_by(tool_calls.c.sequence)
        )
        return [event.doc for event in logged], [tuple(row) for row in rows]


async def test_a_redacted_call_stores_no_text_of_what_it_was_before(tmp_path: Path) -> None:
    async def echo(args: JsonValue) -> JsonValue:
        return {"sent": args, "own": SECRET}

    async with open_store(tmp_path) as store:
        log = await open_run(writer_for(store))
        invocation = _invocation(log, Boundary(_live(PythonTool("leaky:echo", echo))))
        answer = await invocation.call_tool("leaky:echo", {"key": SECRET})
        assert answer == {"sent": {"key": REDACTED}, "own": REDACTED}
        await invocation.journal.flush()
        docs, rows = await _stored(store, log.run_id)
    assert rows == [({"key": REDACTED}, answer)]
    assert not [doc for doc in docs if SECRET in doc]
    assert sum(REDACTED in doc for doc in docs) == 2


async def test_a_served_answer_is_the_agent_s_own_copy_and_stored_as_written(
    tmp_path: Path,
) -> None:
    response: JsonValue = {"found": ["one", 2.5], "more": {"k": None}}
    entry = ToolResponse(tool="t:look", args={"q": 1}, response=response)
    fixtures = FixtureServer(evals.FixtureCursor.of((entry,), "fail"))
    async with open_store(tmp_path) as store:
        log = await open_run(writer_for(store))
        invocation = _invocation(log, Boundary(_live(), fixtures))
        args: dict[str, JsonValue] = {"q": 1}
        answer = await invocation.call_tool("t:look", args)
        assert answer == response
        # Neither side's changes reach the other: the fixture serves every trial.
        assert isinstance(answer, dict)
        answer["found"] = "changed by the agent"
        args["q"] = 2
        assert entry.response == {"found": ["one", 2.5], "more": {"k": None}}
        await invocation.journal.flush()
        docs, rows = await _stored(store, log.run_id)
    assert rows == [({"q": 1}, response)]
    called, returned = docs[-2:]
    assert called == _written_again(called, "inputs", {"q": 1})
    assert returned == _written_again(returned, "outcome", response)


def _written_again(doc: str, member: str, value: JsonValue) -> str:
    """`doc` written again from its parsed members with `value` in place of `member`."""
    parsed = json_text.parse(doc)
    parsed["payload"][member] = value
    return json_text.compact(parsed)
