"""The MCP endpoint's direct path (api/routes/_mcp_server.py `DirectServer`) against the SDK.

Each request the direct path answers is asked twice, of the direct path and of the
official SDK's server alone, for the same invocation: the two answers must be the same
(status, headers, JSON-RPC body). A request it does not answer must reach the SDK
unchanged, so its refusal is the SDK's. Then real SDK clients, of both protocol eras,
list and call through a real server on loopback.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp_types import HEADER_MISMATCH, PARSE_ERROR
from pydantic import JsonValue
from starlette.types import Message, Receive, Scope, Send

from wopeval.api.routes._mcp_server import DirectServer
from wopeval.engine.recording.invocation import Invocation
from wopeval.store.tables import tool_calls
from wopeval.tools import PythonTool, ToolListing

from .test_invocation_endpoints import OTHER_KEY, Endpoints, endpoints, on_loopback

HANDSHAKE = "2025-11-25"
MODERN = "2026-07-28"
ACCEPT = "application/json, text/event-stream"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: Any
    """The JSON-RPC message, or the text of an answer that is none."""


@dataclass
class Asked:
    """A request as the endpoint receives it: method, headers, body."""

    body: bytes
    headers: dict[str, str]
    method: str = "POST"

    def scope(self, token: str) -> Scope:
        path = f"/host/wopeval/mcp/{token}"
        headers = [(name.lower().encode(), value.encode()) for name, value in self.headers.items()]
        if self.method == "POST":
            headers.append((b"content-length", str(len(self.body)).encode()))
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": self.method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [(b"host", b"host"), *headers],
            "client": ("127.0.0.1", 1),
            "server": ("host", 80),
        }


def handshake(method: str, params: Any = None, **headers: str) -> Asked:
    """A handshake-era request (or notification, `id=None`), after `initialize`."""
    return _asked(method, params, {"Mcp-Protocol-Version": HANDSHAKE, **headers})


def modern(method: str, params: dict[str, Any] | None = None, **headers: str) -> Asked:
    """A 2026-07-28 request: its envelope in `_meta`, its routing headers."""
    routing = {"Mcp-Protocol-Version": MODERN, "Mcp-Method": method}
    if params is not None and "name" in params:
        routing["Mcp-Name"] = params["name"]
    return _asked(method, {**(params or {}), "_meta": META}, {**routing, **headers})


def _asked(method: str, params: Any, headers: dict[str, str], request_id: Any = 7) -> Asked:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if request_id is not None and not method.startswith("notifications/"):
        message["id"] = request_id
    if params is not None:
        message["params"] = params
    sent = {"Accept": ACCEPT, "Content-Type": "application/json", **headers}
    return Asked(json.dumps(message).encode(), {k: v for k, v in sent.items() if v})


class Spied:
    """The direct path, counting the requests it hands to the SDK."""

    def __init__(self, direct: DirectServer) -> None:
        self.direct = direct
        self.referred = 0
        sdk = direct.sdk

        async def counted(
            invocation: Invocation, scope: Scope, receive: Receive, send: Send
        ) -> None:
            self.referred += 1
            await sdk(invocation, scope, receive, send)

        direct.sdk = counted  # type: ignore[method-assign]
        self.sdk = sdk


async def _answer(handler: Any, at: Endpoints, asked: Asked) -> Answer:
    messages: list[Message] = [{"type": "http.request", "body": asked.body, "more_body": False}]
    sent: list[Message] = []

    async def receive() -> Message:
        if messages:
            return messages.pop()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        sent.append(message)

    await handler(at.invocation, asked.scope(at.token), receive, send)
    start, *bodies = sent
    data = b"".join(message.get("body", b"") for message in bodies)
    headers = {name.decode(): value.decode() for name, value in start["headers"]}
    assert int(headers.pop("content-length", len(data))) == len(data)
    body = json.loads(data) if data[:1] == b"{" else data.decode()
    return Answer(start["status"], headers, body)


@asynccontextmanager
async def direct_and_sdk(tmp_path: Path) -> AsyncIterator[tuple[Endpoints, Spied]]:
    async with endpoints(tmp_path) as at:
        direct = await at.app.state.mcp_sessions.server()
        yield at, Spied(direct)


async def both(at: Endpoints, spied: Spied, asked: Asked) -> tuple[Answer, Answer, bool]:
    """The SDK's answer, the direct path's, and whether the direct path answered itself."""
    by_sdk = await _answer(spied.sdk, at, asked)
    referred = spied.referred
    direct = await _answer(spied.direct, at, asked)
    return by_sdk, direct, spied.referred == referred


ANSWERED_DIRECTLY: dict[str, Asked] = {
    "handshake initialize": _asked(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
        },
        {},
    ),
    "handshake initialize, a version it has not": _asked(
        "initialize",
        {
            "protocolVersion": "2099-01-01",
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
        },
        {},
        request_id="init-1",
    ),
    "handshake initialized": handshake("notifications/initialized"),
    "handshake cancelled": handshake("notifications/cancelled", {"requestId": 3}),
    "handshake ping": handshake("ping"),
    "handshake ping, no version header": handshake("ping", **{"Mcp-Protocol-Version": ""}),
    "handshake tools/list": handshake("tools/list"),
    "handshake tools/list, 2024-11-05": handshake(
        "tools/list", **{"Mcp-Protocol-Version": "2024-11-05"}
    ),
    "handshake tools/call": handshake(
        "tools/call", {"name": "t__granted", "arguments": {"n": "ü"}}
    ),
    "handshake tools/call, text": handshake("tools/call", {"name": "t__words"}),
    "handshake tools/call, a server's": handshake("tools/call", {"name": "srv__answer"}),
    "handshake tools/call, failing": handshake("tools/call", {"name": "t__fails", "arguments": {}}),
    "handshake tools/call, a server's refusal": handshake("tools/call", {"name": "srv__refuses"}),
    "handshake tools/call, not granted": handshake("tools/call", {"name": "t__secret"}),
    "handshake tools/call, no such tool": handshake("tools/call", {"name": "nope"}),
    "modern initialized": modern("notifications/initialized"),
    "modern tools/list": modern("tools/list"),
    "modern tools/call": modern("tools/call", {"name": "t__granted", "arguments": {"n": 1}}),
    "modern tools/call, list value": modern("tools/call", {"name": "t__list", "arguments": {}}),
    "modern tools/call, a server's": modern("tools/call", {"name": "srv__text"}),
    "modern tools/call, failing": modern("tools/call", {"name": "t__fails", "arguments": {"a": 1}}),
    "modern tools/call, not granted": modern("tools/call", {"name": "t__secret", "arguments": {}}),
}


@pytest.mark.parametrize("case", ANSWERED_DIRECTLY)
async def test_the_direct_path_answers_as_the_sdk_does(tmp_path: Path, case: str) -> None:
    async with direct_and_sdk(tmp_path) as (at, spied):
        by_sdk, direct, answered_itself = await both(at, spied, ANSWERED_DIRECTLY[case])
    assert direct == by_sdk
    assert answered_itself, "the direct path handed it to the SDK"
    assert direct.status in (200, 202)


REFERRED: dict[str, Asked] = {
    "not JSON": Asked(b"{", {"Accept": ACCEPT, "Content-Type": "application/json"}),
    "not JSON, 2026": Asked(
        b"{", {"Accept": ACCEPT, "Content-Type": "application/json", "Mcp-Protocol-Version": MODERN}
    ),
    "a batch": Asked(
        json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]).encode(),
        {"Accept": ACCEPT, "Content-Type": "application/json", "Mcp-Protocol-Version": HANDSHAKE},
    ),
    "a batch, 2026": Asked(
        json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]).encode(),
        {"Accept": ACCEPT, "Content-Type": "application/json", "Mcp-Protocol-Version": MODERN},
    ),
    "tools/call without a name": handshake("tools/call", {"arguments": {}}),
    "tools/call without a name, 2026": modern("tools/call", {"arguments": {}}),
    "arguments not an object": handshake("tools/call", {"name": "t__granted", "arguments": [1]}),
    "an unknown method": handshake("tools/unknown"),
    "an id that is a bool": _asked("ping", None, {"Mcp-Protocol-Version": HANDSHAKE}, True),
    "JSON-RPC 1.0": Asked(
        json.dumps({"jsonrpc": "1.0", "id": 1, "method": "ping"}).encode(),
        {"Accept": ACCEPT, "Content-Type": "application/json"},
    ),
    "an unknown protocol version": handshake(
        "tools/list", **{"Mcp-Protocol-Version": "1999-01-01"}
    ),
    "2026 without its envelope": _asked(
        "tools/list", {}, {"Mcp-Protocol-Version": MODERN, "Mcp-Method": "tools/list"}
    ),
    "2026, Mcp-Method not the body's": modern("tools/list", None, **{"Mcp-Method": "tools/call"}),
    "2026, Mcp-Name not the body's": modern(
        "tools/call", {"name": "t__granted", "arguments": {}}, **{"Mcp-Name": "t__words"}
    ),
    "2026 initialize": modern(
        "initialize",
        {
            "protocolVersion": MODERN,
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
        },
    ),
    "accepts no JSON": handshake("ping", Accept="text/event-stream"),
    "not sent as JSON": handshake("ping", **{"Content-Type": "text/plain"}),
    "a DELETE": Asked(b"", {"Accept": ACCEPT}, method="DELETE"),
}


@pytest.mark.parametrize("case", REFERRED)
async def test_what_the_direct_path_does_not_answer_the_sdk_refuses_unchanged(
    tmp_path: Path, case: str
) -> None:
    async with direct_and_sdk(tmp_path) as (at, spied):
        by_sdk, direct, answered_itself = await both(at, spied, REFERRED[case])
        calls = await at.recorded(tool_calls, "tool")
    assert direct == by_sdk
    assert not answered_itself
    # Refused as the client's fault, never a 500: over HTTP (a JSON-RPC error once the
    # body is read, the SDK's plain text before), or, the handshake era's way once a
    # message is read, as a JSON-RPC error in a 200.
    assert direct.status < 500
    if case.startswith("not JSON"):
        assert direct.status == 400
        assert isinstance(direct.body, dict)
        assert direct.body["error"]["code"] == PARSE_ERROR
    if direct.status == 200 or isinstance(direct.body, dict):
        assert isinstance(direct.body, dict)
        assert direct.body["jsonrpc"] == "2.0"
        assert isinstance(direct.body["error"]["code"], int)
    assert calls == []


async def _routed(args: JsonValue) -> JsonValue:
    return {"content": [{"type": "text", "text": "routed"}]}


ROUTED_SCHEMA: dict[str, JsonValue] = {
    "type": "object",
    "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
}
"""A tool whose `region` argument a 2026-07-28 client also sends as `Mcp-Param-Region`."""


@pytest.mark.parametrize(("header", "answered_itself"), [("eu", True), ("us", False), ("", False)])
async def test_a_2026_calls_mcp_param_headers_are_checked_against_the_tools_schema(
    tmp_path: Path, header: str, answered_itself: bool
) -> None:
    """The header must match the argument the schema names; a call whose header does not
    is the SDK's to refuse (400), and runs nothing."""
    call = modern("tools/call", {"name": "srv__routed", "arguments": {"region": "eu"}})
    call.headers["Mcp-Param-Region"] = header
    call.headers = {name: value for name, value in call.headers.items() if value}
    async with direct_and_sdk(tmp_path) as (at, spied):
        listing = ToolListing("Routed.", ROUTED_SCHEMA, server="srv")
        at.invocation.boundary.live.registry.add(PythonTool("srv:routed", _routed), listing)
        by_sdk, direct, answered = await both(at, spied, call)
        calls = await at.recorded(tool_calls, "tool")
    assert direct == by_sdk
    assert answered is answered_itself
    if answered_itself:
        assert direct.status == 200
        assert calls == [("srv:routed",), ("srv:routed",)], "once by each path"
    else:
        assert direct.status == 400
        assert isinstance(direct.body, dict)
        assert direct.body["error"]["code"] == HEADER_MISMATCH
        assert calls == []


async def test_a_get_is_refused_405_in_either_era(tmp_path: Path) -> None:
    """As the SDK refuses a 2026-07-28 GET; its handshake-era transport would hold the GET
    open with nothing ever on it."""
    get = Asked(b"", {"Accept": "text/event-stream", "Mcp-Protocol-Version": MODERN}, "GET")
    async with direct_and_sdk(tmp_path) as (at, spied):
        by_sdk, direct, answered_itself = await both(at, spied, get)
        handshake_era = await at.client.get(at.mcp, headers={"Accept": "text/event-stream"})
    assert direct == by_sdk == Answer(405, {"allow": "POST"}, "")
    assert answered_itself
    assert (handshake_era.status_code, handshake_era.headers["allow"]) == (405, "POST")


async def test_a_crashing_tool_call_is_answered_as_the_sdk_answers_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure that is no tool error (a bug): the SDK's JSON-RPC error, in each era."""

    async def crashes(*args: object, **kwargs: object) -> JsonValue:
        raise RuntimeError("a bug")

    cases = [
        handshake("tools/call", {"name": "t__granted"}),
        modern("tools/call", {"name": "t__granted", "arguments": {}}),
    ]
    async with direct_and_sdk(tmp_path) as (at, spied):
        monkeypatch.setattr(at.invocation, "call_tool", crashes)
        answers = [await both(at, spied, asked) for asked in cases]
    for by_sdk, direct, answered_itself in answers:
        assert direct == by_sdk
        assert answered_itself
    assert answers[0][1].body == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": 0, "message": "a bug"},
    }
    assert answers[1][1].body == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32603, "message": "Internal server error"},
    }


async def test_another_tenants_key_is_refused_before_any_path_and_runs_nothing(
    tmp_path: Path,
) -> None:
    async with endpoints(tmp_path) as at:
        asked = modern("tools/call", {"name": "t__granted", "arguments": {}})
        refused = await at.client.post(
            at.mcp, content=asked.body, headers={**asked.headers, "x-api-key": OTHER_KEY}
        )
        calls = await at.recorded(tool_calls, "tool")
    assert refused.status_code == 404
    assert calls == []


# ── real clients over a real server ─────────────────────────────────


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_sdk_client_of_either_era_lists_and_calls_through_the_direct_path(
    tmp_path: Path, mode: str
) -> None:
    async with direct_and_sdk(tmp_path) as (at, spied), on_loopback(at) as base:
        async with Client(base + at.mcp, mode=mode) as client:
            listed = await client.list_tools()
            called = await client.call_tool("t__granted", {"n": "ü"})
            refused = await client.call_tool("t__secret", {})
        calls = await at.recorded(tool_calls, "tool", "status")
    assert "t__granted" in [tool.name for tool in listed.tools]
    assert called.structured_content == {"granted": {"n": "ü"}}
    assert not called.is_error
    assert refused.is_error
    assert calls == [("t:granted", "ok")], "the refused call ran nothing"
    # 2026-07-28's `server/discover` is the SDK's; the handshake era's session is all direct.
    assert spied.referred == (1 if mode == "auto" else 0)
