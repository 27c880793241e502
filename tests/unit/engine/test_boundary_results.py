"""What the boundary hands back for each way a call can go, and what a live transport lends
an invocation: the tool's context, the endpoints' grants, the model prices."""

from __future__ import annotations

import asyncio
import math
import time
from pathlib import Path

import pytest
from pydantic import JsonValue
from sqlalchemy import select

from wopeval import evals, models
from wopeval.engine.recording.boundary import (
    Boundary,
    FixtureServer,
    LiveTransport,
    ToolCall,
    ToolResult,
)
from wopeval.engine.recording.grants import InvocationGrants
from wopeval.engine.recording.invocation import Invocation
from wopeval.engine.recording.models import ModelServer
from wopeval.models import CHAT, LiveAnswer, ModelAnswer, ModelRequest
from wopeval.store.tables import model_calls
from wopeval.tools import PythonTool, ToolContext, ToolFailure, ToolRegistry
from wopeval.wire.suite import ToolResponse

from ._store import TENANT, open_run, open_store, writer_for
from .test_boundary import _invocation, _live


class _Echo:
    """A tool that answers with what it was given: its args and the context of its call."""

    name = "t:echo"

    async def call(self, args: JsonValue, context: ToolContext) -> JsonValue:
        await asyncio.sleep(0.03)
        return {"args": args, "tenant": context.tenant, "run": context.run_id}


async def test_a_live_tool_is_given_its_args_and_context_and_timed() -> None:
    registry = ToolRegistry()
    registry.add(_Echo())
    transport = LiveTransport(registry, ToolContext(tenant=TENANT, run_id="run-1"), 5.0)
    started = time.perf_counter()
    result = await transport.handle(ToolCall("t:echo", {"q": 1}, "c"))
    around_ms = math.ceil((time.perf_counter() - started) * 1000)
    assert (result.status, result.result, result.error, result.served_by) == (
        "ok",
        {"args": {"q": 1}, "tenant": TENANT, "run": "run-1"},
        None,
        "live",
    )
    # The tool slept 30 ms inside the timed span, which lies inside the span around it.
    assert result.duration_ms is not None
    assert 10 <= result.duration_ms <= around_ms


async def test_an_offline_host_runs_no_tool_live() -> None:
    ran: list[JsonValue] = []

    async def effect(args: JsonValue) -> JsonValue:
        ran.append(args)
        return None

    registry = ToolRegistry()
    registry.add(PythonTool("t:effect", effect))
    offline = LiveTransport(registry, ToolContext(tenant=TENANT, run_id="r"), 5.0, enabled=False)
    result = await offline.handle(ToolCall("t:effect", {}, "c"))
    message = "t:effect would run live, and this host runs no tool live (offline)"
    assert result == ToolResult(
        "error", None, {"code": "live_tools_disabled", "message": message}, "live", None
    )
    assert ran == []


async def test_an_unknown_tool_is_refused_by_name() -> None:
    result = await _live().handle(ToolCall("t:nobody", {}, "c"))
    error = {"code": "unknown_tool", "message": "no tool named 't:nobody' is registered"}
    assert result == ToolResult("error", None, error, "live", None)


async def _hangs(args: JsonValue) -> JsonValue:
    await asyncio.sleep(60)
    return None


async def test_a_tools_own_timeout_replaces_the_hosts() -> None:
    registry = ToolRegistry()
    registry.add(PythonTool("t:hangs", _hangs), timeout_seconds=0.05)
    transport = LiveTransport(registry, ToolContext(tenant=TENANT, run_id="r"), 5.0)
    result = await transport.handle(ToolCall("t:hangs", {}, "c"))
    assert (result.status, result.error, result.served_by) == (
        "error",
        {"code": "tool_timeout", "message": "t:hangs did not answer in 0.05s", "retryable": True},
        "live",
    )
    assert isinstance(result.duration_ms, int)


async def _raises(args: JsonValue) -> JsonValue:
    raise KeyError("boom")


async def _fails(args: JsonValue) -> JsonValue:
    raise ToolFailure("out_of_stock", "none left", details={"sku": "a"})


async def _rate_limited(args: JsonValue) -> JsonValue:
    raise ToolFailure("slow_down", "too many", status="rate_limited", retryable=True)


@pytest.mark.parametrize(
    ("function", "status", "error", "timed"),
    [
        (_raises, "error", {"code": "tool_raised", "message": "t:x raised KeyError"}, True),
        (
            _fails,
            "error",
            {"code": "out_of_stock", "message": "none left", "details": {"sku": "a"}},
            True,
        ),
        (
            _rate_limited,
            "rate_limited",
            {"code": "slow_down", "message": "too many", "retryable": True},
            False,
        ),
    ],
)
async def test_a_failing_tool_is_the_agents_tool_error(
    function: object, status: str, error: dict[str, JsonValue], timed: bool
) -> None:
    """A refusal (forbidden, rate limited) carries no duration; any other failure does."""
    result = await _live(PythonTool("t:x", function)).handle(ToolCall("t:x", {}, "c"))  # type: ignore[arg-type]
    assert (result.status, result.error, result.served_by) == (status, error, "live")
    assert isinstance(result.duration_ms, int) is timed


def _serve(response: JsonValue, *, is_error: bool = False) -> ToolResult | None:
    entry = ToolResponse(tool="t:any", response=response, isError=is_error)
    return FixtureServer(evals.FixtureCursor.of((entry,), "fail")).serve(ToolCall("t:any", {}, "c"))


def test_a_fixture_answer_takes_no_time() -> None:
    served = ToolResult("ok", {"ok": 1}, None, "fixture", 0, result_text=b'{"ok":1}')
    assert _serve({"ok": 1}) == served
    failed = _serve({"code": "quota", "message": "no"}, is_error=True)
    assert failed is not None
    assert failed.duration_ms == 0
    missed = FixtureServer(evals.FixtureCursor.of((), "fail")).serve(ToolCall("t:any", {}, "c"))
    assert missed is not None
    assert (missed.duration_ms, missed.fixture_miss) == (0, True)


@pytest.mark.parametrize(
    ("response", "error"),
    [
        ({"code": "quota"}, {"code": "quota", "message": "The tool failed."}),
        (
            {"why": "x"},
            {
                "code": "tool_error",
                "message": "The tool failed.",
                "details": {"response": {"why": "x"}},
            },
        ),
        (
            "nope",
            {"code": "tool_error", "message": "The tool failed.", "details": {"response": "nope"}},
        ),
        (
            None,
            {"code": "tool_error", "message": "The tool failed.", "details": {"response": None}},
        ),
    ],
)
def test_an_is_error_entry_without_a_tool_error_shape_is_wrapped_as_one(
    response: JsonValue, error: dict[str, JsonValue]
) -> None:
    served = _serve(response, is_error=True)
    assert served is not None
    assert (served.status, served.error) == ("error", error)


async def test_an_invocations_endpoints_are_granted_for_its_tenant(tmp_path: Path) -> None:
    async with open_store(tmp_path) as store:
        log = await open_run(writer_for(store))
        grants: InvocationGrants[Invocation] = InvocationGrants("http://127.0.0.1:9/")
        live = LiveTransport(ToolRegistry(), ToolContext(tenant=TENANT, run_id="r"), 5.0)
        invocation = _invocation(log, Boundary(live), grants=grants)
        token = invocation.openai_api_key
        assert invocation.mcp_url == f"http://127.0.0.1:9/host/wopeval/mcp/{token}"
        assert grants.resolve(token, TENANT) is invocation
        assert grants.resolve(token, "another-tenant") is None


async def test_a_live_model_exchange_is_priced_at_the_projects_prices(tmp_path: Path) -> None:
    async with open_store(tmp_path) as store:
        log = await open_run(writer_for(store))
        prices = {"m": evals.ModelPrice(input_per_mtok=2.0, output_per_mtok=4.0)}
        context = ToolContext(tenant=TENANT, run_id="r")
        live = LiveTransport(ToolRegistry(), context, 5.0, prices=prices)
        invocation = _invocation(log, Boundary(live))
        usage: dict[str, JsonValue] = {"promptTokens": 1000, "completionTokens": 500}
        answer = ModelAnswer({"model": "m", "content": "hi", "usage": usage})

        async def upstream() -> LiveAnswer:
            return LiveAnswer(answer)

        assert await invocation.call_model(ModelRequest(CHAT, {"model": "m"}), upstream) is answer
        await invocation.journal.flush()
        async with store.reading() as uow:
            cost = (await uow.connection.execute(select(model_calls.c.cost_usd))).scalar_one()
        assert cost == pytest.approx((1000 * 2.0 + 500 * 4.0) / 1_000_000)


async def test_under_model_replay_an_answer_serves_its_api_and_a_miss_names_the_nearest(
    tmp_path: Path,
) -> None:
    recorded: dict[str, JsonValue] = {"model": "claude", "max_tokens": 8, "messages": []}
    message: dict[str, JsonValue] = {"type": "message", "content": [], "model": "claude-1"}
    fixture = evals.ModelFixture(
        evals.model_request_hash(recorded), message, "messages", recorded, 0
    )
    async with open_store(tmp_path) as store:
        log = await open_run(writer_for(store))
        context = ToolContext(tenant=TENANT, run_id="r")
        cursor = evals.ModelReplayCursor([fixture, fixture])
        boundary = Boundary(LiveTransport(ToolRegistry(), context, 5.0), models=ModelServer(cursor))
        invocation = _invocation(log, boundary)

        async def upstream() -> LiveAnswer:
            raise AssertionError("a replayed request reached the upstream")

        # The same body through another API is another request: it misses.
        same_body = models.CHAT.parse({**recorded, "messages": []})
        with pytest.raises(models.ModelReplayMiss, match="no recorded answer is left"):
            await invocation.call_model(same_body, upstream)
        served = await invocation.call_model(models.MESSAGES.parse(recorded), upstream)
        assert served == ModelAnswer(message)
        changed = models.MESSAGES.parse({**recorded, "max_tokens": 9})
        with pytest.raises(models.ModelReplayMiss) as missed:
            await invocation.call_model(changed, upstream)
        assert str(missed.value).endswith(
            "(model exchange 2); nearest recorded request: exchange 0, "
            "1 path differs: $.max_tokens: recorded 8, sent 9"
        )
        await invocation.journal.flush()
        async with store.reading() as uow:
            rows = (await uow.connection.execute(select(model_calls))).mappings().all()
    by_ordinal = {row["ordinal"]: row for row in rows}
    assert [(by_ordinal[i]["api"], by_ordinal[i]["served_by"]) for i in range(3)] == [
        ("chat", "miss"), ("messages", "replay"), ("messages", "miss")
    ]  # fmt: skip
    error = by_ordinal[2]["error"]
    assert error["code"] == "model_replay_miss"
    assert error["nearest"] == {"ordinal": 0, "requestHash": fixture.request_hash}
    assert error["diff"] == [
        {"path": "$.max_tokens", "kind": "changed", "expected": 8, "actual": 9}
    ]
