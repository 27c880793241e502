"""The MCP endpoint's layer (`mcp.McpExchanges`): which requests it answers itself, and that
the host's own layers still wrap it.

The endpoint's answers through the layer (the official SDK client's calls, the refusals of
tools not granted) are tests/unit/api/test_invocation_endpoints.py's.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from starlette.routing import Match
from starlette.types import Receive, Scope, Send

from wopeval.api.app import answered_below_the_router
from wopeval.api.auth import Authenticator
from wopeval.api.deps import InvocationAccess
from wopeval.api.middleware import PROTOCOL_VERSION, VERSION_HEADER
from wopeval.api.routes import mcp
from wopeval.api.routing import route_match
from wopeval.api.upstream_pools import UpstreamPools
from wopeval.engine.recording.grants import InvocationGrants
from wopeval.engine.recording.invocation import Invocation
from wopeval.hosting.app import host_app
from wopeval.settings import Settings
from wopeval.wire import limits

TOKEN = "t" * 43
MCP = f"/host/wopeval/mcp/{TOKEN}"
CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t__x"}}


class Inner:
    """The app behind the layer: notes each request that reaches it, answers 299."""

    def __init__(self) -> None:
        self.reached: list[tuple[str, str]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.reached.append((scope["method"], scope["path"]))
        await send({"type": "http.response.start", "status": 299, "headers": []})
        await send({"type": "http.response.body", "body": b""})


async def _asked(
    method: str, path: str, *, root_path: str = ""
) -> tuple[httpx.Response, list[tuple[str, str]]]:
    inner = Inner()
    layer = mcp.McpExchanges(inner)
    grants: InvocationGrants[Invocation] = InvocationGrants("http://host")
    access = InvocationAccess(grants, Authenticator([]), UpstreamPools())
    state = SimpleNamespace(invocation_access=access, mcp_sessions=mcp.McpSessions())

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        scope = {**scope, "app": SimpleNamespace(state=state), "root_path": root_path}
        await layer(scope, receive, send)

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://host") as client:
        body = None if method in ("GET", "DELETE") else json.dumps(CALL).encode()
        answer = await client.request(method, path, content=body)
    await access.upstreams.aclose()
    return answer, inner.reached


async def test_a_post_to_the_mcp_route_is_answered_by_the_layer_with_its_refusal() -> None:
    answer, reached = await _asked("POST", MCP)
    assert reached == []
    # An unknown token: the route's one 404, in the wire's envelope.
    assert answer.status_code == 404
    assert answer.json() == {"error": "not_found", "message": "No such MCP endpoint."}


@pytest.mark.parametrize(
    ("method", "path", "root_path"),
    [
        ("GET", MCP, ""),  # the router's route: the SDK's stream answer (405)
        ("DELETE", MCP, ""),  # the router's route: the SDK's answer
        ("POST", MCP + "/", ""),  # not the route's path
        ("POST", MCP + "/x", ""),  # two segments
        ("POST", "/host/wopeval/mcp/", ""),  # no token
        ("POST", "/host/wopeval/mcpx" + TOKEN, ""),  # another path as long as the prefix
        ("POST", f"/host/wopeval/openai/{TOKEN}/v1/chat/completions", ""),
        ("POST", "/runs", ""),
        ("POST", MCP, "/base"),  # under a root path: the router's own matching
    ],
)
async def test_every_other_request_goes_on_to_the_router(
    method: str, path: str, root_path: str
) -> None:
    answer, reached = await _asked(method, path, root_path=root_path)
    assert answer.status_code == 299
    assert reached == [(method, path)]


def test_what_the_layers_answer_the_route_table_serves(tmp_path: Path) -> None:
    # The request guard takes the layers' word for the table's (`routed`): it must be true.
    table = host_app(Settings(data_dir=tmp_path / "data")).router
    claimed = [MCP, "/host/wopeval/mcp/a%2Fb", f"/host/wopeval/openai/{TOKEN}/v1/responses"]
    for path in claimed:
        scope = {"type": "http", "method": "POST", "path": path, "headers": []}
        assert answered_below_the_router(scope)
        assert route_match(table, scope) is Match.FULL


@pytest.fixture
def app(tmp_path: Path) -> Any:
    """The host's app, built and not started: a request that reaches the MCP layer finds no
    invocation access and crashes (500), so only the layers around it can answer 4xx."""
    return host_app(Settings(data_dir=tmp_path / "data"))


async def _post(app: Any, path: str, content: bytes, headers: dict[str, str]) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://host") as client:
        return await client.post(path, content=content, headers=headers)


async def test_the_hosts_layers_refuse_an_mcp_request_before_the_layer_sees_it(app: Any) -> None:
    json_type = {"Content-Type": "application/json"}
    too_large = await _post(
        app, MCP, b"{}", {**json_type, "Content-Length": str(limits.DEFAULT_MAX_BODY_BYTES + 1)}
    )
    not_strict = await _post(app, MCP, b'{"id": NaN}', json_type)
    nul = await _post(app, MCP.replace(TOKEN, "a%00b"), json.dumps(CALL).encode(), json_type)
    other_major = await _post(app, MCP, b"{}", {**json_type, VERSION_HEADER: "3"})
    assert (too_large.status_code, too_large.json()["error"]) == (413, "payload_too_large")
    assert too_large.headers["connection"] == "close"
    assert (not_strict.status_code, not_strict.json()["error"]) == (400, "validation_error")
    assert (nul.status_code, nul.json()["details"]) == (400, {"field": "path"})
    assert other_major.status_code == 406
    for answer in (too_large, not_strict, nul, other_major):
        assert answer.headers[VERSION_HEADER] == PROTOCOL_VERSION


async def test_a_crash_in_the_layer_is_the_crash_guards_500_with_the_version_header(
    app: Any,
) -> None:
    # Not started: the layer's look-up of the invocation access raises.
    answer = await _post(app, MCP, json.dumps(CALL).encode(), {})
    assert (answer.status_code, answer.json()["error"]) == (500, "internal_error")
    assert answer.headers[VERSION_HEADER] == PROTOCOL_VERSION
