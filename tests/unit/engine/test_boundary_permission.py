"""The tool boundary holds the permission: `call_tool` refuses a tool the agent is not granted,
however the call names it, before anything runs or is recorded; and what a live tool answers
reaches no one with a secret or the invocation's token in it."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from pydantic import JsonValue

from _handles import handle_of
from wopeval.agents import AgentContext, AgentRegistry, AgentSpec, PythonAgent, ToolCallError
from wopeval.engine.recording.boundary import Boundary, LiveTransport
from wopeval.engine.recording.grants import InvocationGrants
from wopeval.engine.recording.invocation import Invocation, Where, run_invocation
from wopeval.engine.recording.redaction import REDACTED, Redactor, SecretSource
from wopeval.engine.runlog.runlog import Journal, RunLog
from wopeval.store import Store
from wopeval.tools import PythonTool, ToolContext, ToolFailure, ToolRegistry

from ._store import TENANT, open_run, open_store, sequences, writer_for

SECRET = "configured-secret-4f9a"


async def _decide(context: object) -> JsonValue:
    return None


def _invocation(
    log: RunLog,
    ran: list[str],
    allowlist: tuple[str, ...] | None,
    *tools: PythonTool,
    secrets: tuple[SecretSource, ...] = (SecretSource(value=SECRET),),
) -> Invocation:
    registry = ToolRegistry()

    def tool(name: str) -> PythonTool:
        async def effect(args: JsonValue) -> JsonValue:
            ran.append(name)
            return {"ran": name}

        return PythonTool(name, effect)

    for name in ("orders:lookup", "orders:refund", "admin:wipe"):
        registry.add(tool(name))
    for extra in tools:
        registry.add(extra)
    live = LiveTransport(
        registry,
        ToolContext(tenant=TENANT, run_id=log.run_id),
        5.0,
        redactor=Redactor(secrets),
    )
    return Invocation(
        spec=AgentSpec("agent", PythonAgent(_decide), "python", tools=allowlist),
        input=None,
        journal=Journal(log),
        boundary=Boundary(live),
        agents=AgentRegistry(),
        where=Where(log.run_id),
        grants=InvocationGrants("http://127.0.0.1:1"),
    )


async def _refused(invocation: Invocation, name: str, *, offered: bool = False) -> None:
    with pytest.raises(ToolCallError) as raised:
        await invocation.call_tool(name, {}, named_by="offered" if offered else "canonical")
    assert raised.value.code == "tool_not_offered"
    message = f"{name} is not offered to agent agent"
    assert raised.value.error == {"code": "tool_not_offered", "message": message}
    assert str(raised.value) == message


async def _nothing_recorded(store: Store, log: RunLog, invocation: Invocation) -> None:
    await invocation.journal.flush()
    assert await sequences(store, log.run_id) == [(0, "run.started")]
    assert invocation.shared.executed == []
    assert invocation.idle() == ("no_tool_calls",)


async def test_a_tool_outside_the_allowlist_is_refused_by_either_name(tmp_path: Path) -> None:
    async with open_store(tmp_path) as store:
        log = await open_run(writer_for(store))
        ran: list[str] = []
        invocation = _invocation(log, ran, ("orders:*",))
        await _refused(invocation, "admin:wipe")
        await _refused(invocation, "admin__wipe", offered=True)
        # A canonical name where the offered one is expected, and a name that is no tool's.
        await _refused(invocation, "orders:lookup", offered=True)
        await _refused(invocation, "nothing__here", offered=True)
        assert ran == []
        await _nothing_recorded(store, log, invocation)
        assert await invocation.call_tool("orders__refund", {}, named_by="offered") == {
            "ran": "orders:refund"
        }
        assert await invocation.call_tool("orders:lookup", {}) == {"ran": "orders:lookup"}
        assert ran == ["orders:refund", "orders:lookup"]
        assert [call.tool for call in invocation.shared.executed] == [
            "orders:refund",
            "orders:lookup",
        ]


async def test_an_empty_allowlist_grants_nothing_and_none_grants_every_tool(
    tmp_path: Path,
) -> None:
    async with open_store(tmp_path) as store:
        log = await open_run(writer_for(store))
        ran: list[str] = []
        nothing = _invocation(log, ran, ())
        await _refused(nothing, "orders:lookup")
        await _nothing_recorded(store, log, nothing)
        everything = _invocation(log, ran, None)
        assert await everything.call_tool("admin__wipe", {}, named_by="offered") == {
            "ran": "admin:wipe"
        }
        # Granted, and no tool by that name: the live boundary's own `unknown_tool`, recorded.
        with pytest.raises(ToolCallError) as unknown:
            await everything.call_tool("orders:missing", {})
        assert unknown.value.code == "unknown_tool"
        assert [call.status for call in everything.shared.executed] == ["ok", "error"]


async def _echo_secret(args: JsonValue) -> JsonValue:
    return {"echo": f"key={SECRET}", SECRET: [f"Bearer {SECRET}", "Bearer kept-as-data"]}


async def _fail_with_secret(args: JsonValue) -> JsonValue:
    raise ToolFailure(
        "upstream_error",
        f"denied with key {SECRET} (Authorization: Bearer abc.def)",
        details={"body": {"headers": {"authorization": f"Bearer {SECRET}"}, "k": "sk-" + "x" * 20}},
    )


async def test_what_a_live_tool_answers_loses_the_secrets_before_anyone_sees_it(
    tmp_path: Path,
) -> None:
    async with open_store(tmp_path) as store:
        log = await open_run(writer_for(store))
        ran: list[str] = []
        invocation = _invocation(
            log,
            ran,
            None,
            PythonTool("leaky:echo", _echo_secret),
            PythonTool("leaky:fail", _fail_with_secret),
        )
        answer = await invocation.call_tool("leaky:echo", {})
        # An answer loses the known secrets only: `Bearer …` that is no secret is data.
        assert answer == {
            "echo": f"key={REDACTED}",
            REDACTED: [f"Bearer {REDACTED}", "Bearer kept-as-data"],
        }
        with pytest.raises(ToolCallError) as failed:
            await invocation.call_tool("leaky:fail", {})
        # An error loses them and whatever looks like a credential.
        assert failed.value.error == {
            "code": "upstream_error",
            "message": f"denied with key {REDACTED} (Authorization: Bearer {REDACTED})",
            "details": {
                "body": {"headers": {"authorization": f"Bearer {REDACTED}"}, "k": REDACTED}
            },
        }
        executed = invocation.shared.executed
        assert (executed[0].result, executed[1].error) == (answer, failed.value.error)
        await invocation.journal.flush()
        assert SECRET not in str(await sequences(store, log.run_id))


async def test_the_invocations_token_is_cut_from_what_a_tool_is_sent_and_answers(
    tmp_path: Path,
) -> None:
    async with open_store(tmp_path) as store:
        log = await open_run(writer_for(store))
        token_seen: list[str] = []

        async def echo_token(args: JsonValue) -> JsonValue:
            token_seen.append(str(args))
            return {"token": token_seen[0]}

        invocation = _invocation(log, [], None, PythonTool("leaky:token", echo_token))
        token = invocation.openai_api_key
        token_seen.append(token)
        assert await invocation.call_tool("leaky:token", {"mine": [token, SECRET]}) == {
            "token": REDACTED
        }
        # The agent's args lose it too, before the tool or the record sees them.
        assert token_seen[1] == str({"mine": [REDACTED, REDACTED]})
        assert invocation.shared.executed[0].args == {"mine": [REDACTED, REDACTED]}


async def _echo_environment(args: JsonValue) -> JsonValue:
    return {"rotated": os.environ.get("UNIT_ROTATED_TOKEN"), "added": os.environ.get("UNIT_ADDED")}


async def test_a_secret_rotated_or_set_between_two_calls_is_cut_from_the_second(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A variable is read as egress reads it, at each call: the list searched for, kept
    # from the first call, must not hide the second call's new values.
    monkeypatch.setenv("UNIT_ROTATED_TOKEN", "first-token-value")
    monkeypatch.delenv("UNIT_ADDED", raising=False)
    async with open_store(tmp_path) as store:
        log = await open_run(writer_for(store))
        invocation = _invocation(
            log,
            [],
            None,
            PythonTool("leaky:environment", _echo_environment),
            secrets=(SecretSource(env="UNIT_ROTATED_TOKEN"), SecretSource(env="UNIT_ADDED")),
        )
        sent: list[JsonValue] = ["first-token-value", "second-token-value", "added-value"]
        first = await invocation.call_tool("leaky:environment", {"sent": sent})
        assert first == {"rotated": REDACTED, "added": None}
        monkeypatch.setenv("UNIT_ROTATED_TOKEN", "second-token-value")
        monkeypatch.setenv("UNIT_ADDED", "added-value")
        second = await invocation.call_tool("leaky:environment", {"sent": sent})
        assert second == {"rotated": REDACTED, "added": REDACTED}
        executed = invocation.shared.executed
        assert executed[0].args == {"sent": [REDACTED, "second-token-value", "added-value"]}
        assert executed[1].args == {"sent": ["first-token-value", REDACTED, REDACTED]}
        await invocation.journal.flush()
        async with store.reading() as uow:
            run = await handle_of(uow, log.run_id)
            docs = await uow.events.all_docs(run)
            (_, recorded) = await uow.tool_calls.page(run, after=-1, limit=10)
        # The second call's record and events: args and answer, without the new values.
        assert (recorded.inputs, recorded.result) == (executed[1].args, second)
        tail = "".join(docs[-2:])
        assert "second-token-value" not in tail
        assert "added-value" not in tail


def test_redacting_an_answer_with_no_secret_known_gives_it_back_as_it_is() -> None:
    answer: JsonValue = {"a": ["Bearer x", 1, None, True]}
    assert Redactor().redact_known(answer) is answer
    assert Redactor((SecretSource(value="abc"),)).redact_known(answer) == answer


async def test_an_agent_that_raises_with_a_secret_is_kept_and_logged_without_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def raising(context: AgentContext) -> JsonValue:
        raise RuntimeError(f"the API refused key {SECRET} for {context.openai_api_key}")

    async with open_store(tmp_path) as store:
        log = await open_run(writer_for(store))
        invocation = _invocation(log, [], None)
        invocation.spec = AgentSpec("agent", PythonAgent(raising), "python")
        with caplog.at_level(logging.ERROR, logger="wopeval.agents"):
            outcome = await run_invocation(invocation, source="run-api")
        assert outcome.failed
        assert outcome.error is not None
        assert outcome.error["message"] == f"the API refused key {REDACTED} for {REDACTED}"
        assert SECRET not in outcome.error["traceback"]
        assert f"RuntimeError: the API refused key {REDACTED}" in outcome.error["traceback"]
        (logged,) = [r for r in caplog.records if r.name == "wopeval.agents"]
        assert logged.exc_info is None
        assert SECRET not in logged.getMessage()
        assert f"the API refused key {REDACTED}" in logged.getMessage()
