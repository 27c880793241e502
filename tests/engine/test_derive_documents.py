"""`ToolCallsRepo.derive`: a fixture source's documents, written by the database.

The store writes each own call's RFC 0252 §D document in SQL and counts the §C facts
(every call still held, some own call failed). The rules are stated in evals/_derive.py;
here the store's text must be, byte for byte, the compact JSON of what
`evals.derive_fixture_documents` derives from the same calls, on both stores, whatever the
calls hold: unicode, nested and big values, failures with and without an error, calls of
another agent or of a delegate, redacted and erased content, awkward tool names.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import null, update

from _backends import Backend
from _hosts import TENANT, running_host
from _recorded_calls import AGENT, recorded
from wopeval import evals
from wopeval.engine.recording.redaction import Redactor
from wopeval.engine.runs.erasure import erased_error
from wopeval.hosting.host import Host
from wopeval.store import DerivedSource, RunHandle, ToolCallRow
from wopeval.store.tables import tool_calls
from wopeval.wire import json_text
from wopeval.wire.principal import Principal
from wopeval.wire.runs import CreateRunRequest, RunStatus

SCRIPT: dict[str, Any] = {
    "calls": [
        {"tool": "conformance.eval:counter", "args": {"op": "inc", "key": "held"}},
        {"tool": "conformance.eval:counter", "args": {"op": "read", "key": "held"}},
        {"tool": "conformance.eval:counter", "args": {"op": "inc", "key": "held"}},
    ],
    "answer": "done",
}
NOT_HELD: dict[str, dict[str, Any]] = {
    "record-off": {"recorded": False},
    "erased": {"erased_at": datetime(2026, 1, 1, tzinfo=UTC)},
    "outcome-unknown": {"status": "unknown"},
}
TOKEN = "tok-" + "s" * 40
"""An invocation's token, as the redactor is told to cut it."""
FIRST = 1000
"""Sequences of the calls added to a recorded source: past its own."""


async def _sources(host: Host, count: int) -> list[RunHandle]:
    principal = Principal(TENANT, "key-test")
    handles = []
    for _ in range(count):
        record = await host.engine.create_workflow_run(
            principal, CreateRunRequest(workflowId="conformance-agent-counter", inputs=SCRIPT)
        )
        await host.engine.wait_idle()
        assert (await host.engine.get_run(principal, record.run_id)).status is RunStatus.COMPLETED
        async with host.store.reading() as uow:
            (state,) = (await uow.runs.states(TENANT, [record.run_id])).values()
        handles.append(state.handle)
    return handles


def _edge_calls() -> list[evals.RecordedCall]:
    """Calls whose documents have tripped, or could trip, a text written by hand. Out of
    sequence order, as a store may hold them; no floats (a float's text is the codec's
    choice, not derivation's)."""
    redactor = Redactor()
    nested = {"a": [1, {"b": [None, True, {"c": "d"}]}], "": {}, "e": []}
    calls = [
        recorded(FIRST + 9, inputs={"q": "é ☃ 😀 \u2028\u2029 \ufeff"}, result="naïve\nquote\"\\"),
        recorded(FIRST + 2, tool='quoted "tool"\n\t\x01\x1f\x7f é/☃', inputs=nested, result=nested),
        recorded(FIRST + 3, inputs=None, result=None),
        recorded(FIRST + 4, inputs=[], result={"big": 2**70, "negative": -(2**70)}),
        recorded(FIRST + 5, inputs="", result=0),
        recorded(FIRST + 6, status="error", result=None,
              error={"code": "tool_error", "message": "non", "details": {"x": [1, "ü"]}}),
        recorded(FIRST + 7, status="forbidden", result=None, error={"code": "forbidden"}),
        recorded(FIRST + 8, status="rate_limited", result=None, error=None, duration_ms=None),
        recorded(FIRST + 1, status="unknown", result=None, error=None, duration_ms=None),
        # The agent's content as the recording keeps it: its token cut out, a credential-
        # shaped string in an error's words too.
        recorded(FIRST + 10, inputs=redactor.redact_known({"auth": f"use {TOKEN}"}, [TOKEN]),
              result=redactor.redact_known([TOKEN, "kept"], [TOKEN])),
        recorded(FIRST + 11, status="error", result=None,
              error=redactor.redact_error({"code": "tool_error", "message": f"{TOKEN} refused"},
                                          [TOKEN])),
        # Not own calls: another agent's, and a delegate's of this agent.
        recorded(FIRST + 12, agent_id="someone-else", status="error", error={"code": "x"}),
        recorded(FIRST + 13, is_delegate=True, status="forbidden", error={"code": "forbidden"}),
        recorded(FIRST + 14, is_delegate=True, tool="delegated", result={"hidden": True}),
    ]  # fmt: skip
    return calls


def _row(call: evals.RecordedCall, run_id: str) -> tuple[Any, ...]:
    return ToolCallRow(
        call.invocation_id, call.agent_id, call.is_delegate, call.tool, call.call_id,
        call.status, call.served_by, call.duration_ms, True, call.inputs, call.result,
        call.error,
    ).to_row(run_id, call.sequence)  # fmt: skip


def _expected(calls: list[evals.RecordedCall]) -> str:
    """The rule's documents as compact JSON: what the create stores as the derived copy."""
    return json_text.compact(evals.derive_fixture_documents(calls, AGENT))


def test_documents_are_the_rules_byte_for_byte(backend: Backend, tmp_path: Path) -> None:
    async def scenario() -> None:
        async with running_host(backend, tmp_path) as host:
            edge, erased, plain, other = await _sources(host, 4)
            added = _edge_calls()
            async with host.store.transaction() as uow:
                await uow.tool_calls.append([_row(call, edge.run_id) for call in added])
                # An error of SQL NULL, not JSON null: the status is its code all the same.
                await uow.connection.execute(
                    update(tool_calls)
                    .where(tool_calls.c.run_id == edge.run_id, tool_calls.c.sequence == FIRST + 8)
                    .values(error=null())
                )
                await uow.tool_calls.erase(erased.run_id, datetime.now(UTC), erased_error)
                await uow.connection.execute(
                    update(tool_calls)
                    .where(tool_calls.c.run_id == other.run_id)
                    .values(agent_id="someone-else")
                )
            sources = [edge, erased, plain, other]
            async with host.store.reading() as uow:
                derived = await uow.tool_calls.derive(sources, AGENT)
                recorded = {
                    source.run_id: await uow.tool_calls.page(source, after=-1, limit=100)
                    for source in sources
                }
            edge_calls = [*recorded[edge.run_id][: len(SCRIPT["calls"])], *added]
            assert derived[edge.run_id] == DerivedSource(_expected(edge_calls), False, True)
            # Erased: args and result null, the error's code kept; no longer held.
            erased_calls = recorded[erased.run_id]
            assert {call.inputs for call in erased_calls} == {None}
            assert derived[erased.run_id] == DerivedSource(_expected(erased_calls), False, False)
            assert derived[plain.run_id] == DerivedSource(
                _expected(recorded[plain.run_id]), True, False
            )
            # No call of the agent: nothing derived, nothing failed, nothing missing.
            assert derived[other.run_id] == DerivedSource("[]", True, False)
            assert _expected(recorded[other.run_id]) == "[]"

    asyncio.run(scenario())


def test_the_facts_are_the_rules_of_the_calls(backend: Backend, tmp_path: Path) -> None:
    # RFC 0252 §C's failed call is an own call's, never another agent's or a delegate's.
    cases: dict[str, list[evals.RecordedCall]] = {
        "all-ok": [recorded(FIRST)],
        "other-agent-failed": [recorded(FIRST, agent_id="someone-else", status="error")],
        "delegate-failed": [recorded(FIRST, is_delegate=True, status="forbidden")],
        "own-never-ran": [recorded(FIRST, status="rate_limited", result=None)],
    }

    async def scenario() -> None:
        async with running_host(backend, tmp_path) as host:
            sources = dict(zip(cases, await _sources(host, len(cases)), strict=True))
            async with host.store.transaction() as uow:
                for name, source in sources.items():
                    rows = [_row(call, source.run_id) for call in cases[name]]
                    await uow.tool_calls.append(rows)
            async with host.store.reading() as uow:
                derived = await uow.tool_calls.derive(list(sources.values()), AGENT)
                for name, source in sources.items():
                    calls = await uow.tool_calls.page(source, after=-1, limit=100)
                    assert derived[source.run_id].has_failed_call is evals.has_failed_call(
                        calls, AGENT
                    ), name
                    assert derived[source.run_id].documents == _expected(calls), name
            assert [derived[s.run_id].has_failed_call for s in sources.values()] == [
                False, False, False, True
            ]  # fmt: skip

    asyncio.run(scenario())


@pytest.mark.parametrize("change", sorted(NOT_HELD))
def test_a_call_no_longer_held_clears_its_source_alone(
    backend: Backend, tmp_path: Path, change: str
) -> None:
    async def scenario() -> None:
        async with running_host(backend, tmp_path) as host:
            changed, kept = await _sources(host, 2)
            async with host.store.reading() as uow:
                before = await uow.tool_calls.derive([changed, kept], AGENT)
                recorded = await uow.tool_calls.page(changed, after=-1, limit=100)
            assert before[changed.run_id].all_held
            assert before[kept.run_id].all_held
            assert [entry["args"] for entry in json_text.parse(before[kept.run_id].documents)] == [
                call["args"] for call in SCRIPT["calls"]
            ]
            async with host.store.transaction() as uow:
                await uow.connection.execute(
                    update(tool_calls)
                    .where(
                        tool_calls.c.run_id == changed.run_id,
                        tool_calls.c.sequence == recorded[1].sequence,
                    )
                    .values(**NOT_HELD[change])
                )
            async with host.store.reading() as uow:
                after = await uow.tool_calls.derive([changed, kept], AGENT)
            assert after[changed.run_id].all_held is False
            assert after[kept.run_id].all_held is True
            assert len(json_text.parse(after[changed.run_id].documents)) == len(SCRIPT["calls"])

    asyncio.run(scenario())
