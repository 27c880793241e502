"""The model proxy's layer (`model_proxy.ProxyExchanges`): which requests it answers itself,
and that the host's own layers still wrap it.

The exchanges themselves, through the layer, are tests/unit/api/test_invocation_endpoints.py's.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from starlette.responses import Response
from starlette.routing import Match, Router
from starlette.types import Message, Receive, Scope, Send

from wopeval.api.auth import Authenticator
from wopeval.api.deps import InvocationAccess
from wopeval.api.middleware import PROTOCOL_VERSION, VERSION_HEADER
from wopeval.api.request_guard import RequestGuard, StrictBody, strict_body
from wopeval.api.routes import model_proxy
from wopeval.api.routing import route_match
from wopeval.api.upstream_pools import UpstreamPools
from wopeval.engine.recording.grants import InvocationGrants
from wopeval.engine.recording.invocation import Invocation
from wopeval.hosting.app import host_app
from wopeval.settings import Settings
from wopeval.wire import limits

TOKEN = "t" * 43
CHAT = f"/host/wopeval/openai/{TOKEN}/v1/chat/completions"
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


class Inner:
    """The app behind the layer: notes each request that reaches it, answers 299."""

    def __init__(self) -> None:
        self.reached: list[tuple[str, str]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.reached.append((scope["method"], scope["path"]))
        await send({"type": "http.response.start", "status": 299, "headers": []})
        await send({"type": "http.response.body", "body": b""})


def _state() -> SimpleNamespace:
    grants: InvocationGrants[Invocation] = InvocationGrants("http://host")
    return SimpleNamespace(
        invocation_access=InvocationAccess(grants, Authenticator([]), UpstreamPools())
    )


async def _asked(
    method: str, path: str, *, root_path: str = ""
) -> tuple[httpx.Response, list[tuple[str, str]]]:
    inner = Inner()
    layer = model_proxy.ProxyExchanges(inner)
    state = _state()
    access = state.invocation_access

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        scope = {**scope, "app": SimpleNamespace(state=state), "root_path": root_path}
        await layer(scope, receive, send)

    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://host") as client:
        answer = await client.request(method, path, json=BODY)
    await access.upstreams.aclose()
    return answer, inner.reached


@pytest.mark.parametrize(
    "path",
    [
        CHAT,
        f"/host/wopeval/openai/{TOKEN}/v1/responses",
        f"/host/wopeval/anthropic/{TOKEN}/v1/messages",
    ],
)
async def test_a_post_to_a_proxy_route_is_answered_by_the_layer_with_its_refusal(
    path: str,
) -> None:
    answer, reached = await _asked("POST", path)
    assert reached == []
    # An unknown token: the routes' one 404, in the wire's envelope.
    assert answer.status_code == 404
    assert answer.json() == {"error": "not_found", "message": "No such model endpoint."}


async def test_an_agent_gone_mid_body_is_answered_nothing() -> None:
    inner = Inner()
    sent: list[Message] = []
    arriving: list[Message] = [
        {"type": "http.request", "body": b'{"model"', "more_body": True},
        {"type": "http.disconnect"},
    ]

    async def receive() -> Message:
        return arriving.pop(0)

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": CHAT, "headers": [], "app": _app()}
    await model_proxy.ProxyExchanges(inner)(scope, receive, send)
    assert (sent, inner.reached) == ([], [])


def _app() -> SimpleNamespace:
    return SimpleNamespace(state=_state())


@pytest.mark.parametrize(
    ("method", "path", "root_path"),
    [
        ("GET", CHAT, ""),  # another method: the router's 405
        ("POST", f"/host/wopeval/anthropic/{TOKEN}/v1/chat/completions", ""),  # no such pair
        ("POST", f"/host/wopeval/openai/{TOKEN}/x/v1/chat/completions", ""),  # two segments
        ("POST", "/host/wopeval/openai//v1/chat/completions", ""),  # no token
        ("POST", CHAT + "/", ""),
        ("POST", f"/host/wopeval/mcp/{TOKEN}", ""),
        ("POST", "/runs", ""),
        ("POST", CHAT, "/base"),  # under a root path: the router's own matching
    ],
)
async def test_every_other_request_goes_on_to_the_router(
    method: str, path: str, root_path: str
) -> None:
    answer, reached = await _asked(method, path, root_path=root_path)
    assert answer.status_code == 299
    assert reached == [(method, path)]


def test_what_the_layer_answers_the_route_table_serves(tmp_path: Path) -> None:
    # The request guard takes the layer's word for the table's (`routed`): it must be true.
    table = host_app(Settings(data_dir=tmp_path / "data")).router
    claimed = [
        f"/host/wopeval/openai/{TOKEN}/v1/chat/completions",
        f"/host/wopeval/openai/{TOKEN}/v1/responses",
        f"/host/wopeval/anthropic/{TOKEN}/v1/messages",
        "/host/wopeval/openai/a%2Fb/v1/responses",
    ]
    for path in claimed:
        scope = {"type": "http", "method": "POST", "path": path, "headers": []}
        assert model_proxy.serves(scope)
        assert route_match(table, scope) is Match.FULL


@pytest.fixture
def app(tmp_path: Path) -> Any:
    """The host's app, built and not started: a request that reaches the proxy's layer finds
    no invocation access and crashes (500), so only the layers around it can answer 4xx."""
    return host_app(Settings(data_dir=tmp_path / "data"))


async def _post(app: Any, path: str, content: bytes, headers: dict[str, str]) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://host") as client:
        return await client.post(path, content=content, headers=headers)


async def test_the_hosts_layers_refuse_a_proxy_request_before_the_layer_sees_it(app: Any) -> None:
    json_type = {"Content-Type": "application/json"}
    too_large = await _post(
        app, CHAT, b"{}", {**json_type, "Content-Length": str(limits.DEFAULT_MAX_BODY_BYTES + 1)}
    )
    not_strict = await _post(app, CHAT, b'{"model": NaN}', json_type)
    nul = await _post(app, CHAT.replace(TOKEN, "a%00b"), json.dumps(BODY).encode(), json_type)
    other_major = await _post(app, CHAT, b"{}", {**json_type, VERSION_HEADER: "3"})
    assert (too_large.status_code, too_large.json()["error"]) == (413, "payload_too_large")
    assert too_large.headers["connection"] == "close"
    assert (not_strict.status_code, not_strict.json()["error"]) == (400, "validation_error")
    assert not_strict.json()["details"] == {"field": "model"}
    assert (nul.status_code, nul.json()["details"]) == (400, {"field": "path"})
    assert other_major.status_code == 406
    for answer in (too_large, not_strict, nul, other_major):
        assert answer.headers[VERSION_HEADER] == PROTOCOL_VERSION


async def test_a_crash_in_the_layer_is_the_crash_guards_500_with_the_version_header(
    app: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # Not started: the layer's look-up of the invocation access raises.
    answer = await _post(app, CHAT, json.dumps(BODY).encode(), {})
    assert (answer.status_code, answer.json()["error"]) == (500, "internal_error")
    assert answer.headers[VERSION_HEADER] == PROTOCOL_VERSION
    (logged,) = [r.getMessage() for r in caplog.records if r.name == "wopeval.api"]
    assert (
        logged
        == "unhandled error answering POST /host/wopeval/openai/…/v1/chat/completions (run -)"
    )


async def test_the_request_guard_hands_on_a_body_it_found_strict_json() -> None:
    found: list[StrictBody | None] = []

    async def probe(scope: Scope, receive: Receive, send: Send) -> None:
        found.append(strict_body(scope))
        await Inner()(scope, receive, send)

    guard = RequestGuard(probe, max_body_bytes=1024, router=Router(), routed=model_proxy.serves)
    raw = json.dumps(BODY).encode()
    transport = httpx.ASGITransport(app=guard)
    async with httpx.AsyncClient(transport=transport, base_url="http://host") as client:
        await client.post(CHAT, content=raw, headers={"Content-Type": "application/json"})
        # Not JSON by its type: counted, not parsed, so nothing to hand on.
        await client.post(CHAT, content=raw, headers={"Content-Type": "text/plain"})
    assert found == [StrictBody(raw, BODY), None]


@pytest.mark.parametrize("guarded", [True, False], ids=["guard-parsed", "read-here"])
async def test_the_layer_takes_the_body_the_guard_parsed_else_reads_it(
    guarded: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = json.dumps(BODY).encode()
    checked = StrictBody(raw, BODY)
    exchanged: list[StrictBody | bytes] = []

    async def exchange(
        api: Any, token: str, headers: Any, body: StrictBody | bytes, access: Any
    ) -> Response:
        exchanged.append(body)
        return Response(status_code=299)

    async def receive() -> Message:
        assert not guarded, "the guard's body is not read again"
        return {"type": "http.request", "body": raw, "more_body": False}

    async def send(message: Message) -> None:
        pass

    monkeypatch.setattr(model_proxy, "_exchange", exchange)
    scope: Scope = {"type": "http", "method": "POST", "path": CHAT, "headers": [], "app": _app()}
    if guarded:
        scope["wopeval.strict_body"] = checked
    await model_proxy.ProxyExchanges(Inner())(scope, receive, send)
    assert exchanged == [checked if guarded else raw]
