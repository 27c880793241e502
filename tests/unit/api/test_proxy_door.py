"""The proxy's door (`api/proxy_door.py`): which requests go through it, and that it is the
host's own layers around the proxy's, as the whole stack has them.

That those layers still refuse a proxied request before the proxy's layer sees it, and
that a crash in it is the crash guard's 500, is test_proxy_exchanges.py's (through the
host's app, so through the door)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.types import Receive, Scope, Send

from wopeval.api.errors import CrashGuard
from wopeval.api.middleware import VersionNegotiation
from wopeval.api.proxy_door import ProxyDoor
from wopeval.api.request_guard import RequestGuard
from wopeval.api.routes.model_proxy import ProxyExchanges
from wopeval.hosting.app import host_app
from wopeval.settings import Settings

TOKEN = "t" * 43
CHAT = f"/host/wopeval/openai/{TOKEN}/v1/chat/completions"


class Side:
    """One side of the door: notes the paths that reach it."""

    def __init__(self) -> None:
        self.reached: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.reached.append(scope["path"])


@pytest.mark.parametrize(
    ("method", "path", "raw_path", "through_door"),
    [
        ("POST", CHAT, CHAT, True),
        ("POST", f"/host/wopeval/anthropic/{TOKEN}/v1/messages", None, True),
        ("GET", CHAT, CHAT, False),
        ("POST", "/runs", b"/runs", False),
        ("POST", f"/host/wopeval/mcp/{TOKEN}", None, False),
        # `LegacyPathIds` rewrites this target to one the proxy does not serve.
        ("POST", CHAT, CHAT.replace("/openai/", "%2Fopenai/"), False),
        ("POST", CHAT, CHAT.replace("/openai/", "%2fopenai/"), False),
    ],
)
async def test_a_request_the_proxy_answers_goes_through_the_door_any_other_the_whole_stack(
    method: str, path: str, raw_path: str | None, through_door: bool
) -> None:
    door, whole = Side(), Side()
    scope: Scope = {"type": "http", "method": method, "path": path, "headers": []}
    if raw_path is not None:
        scope["raw_path"] = raw_path.encode() if isinstance(raw_path, str) else raw_path

    async def receive() -> Any:
        raise AssertionError("the door reads nothing")

    async def send(message: Any) -> None:
        raise AssertionError("the door answers nothing")

    await ProxyDoor(door, whole)(scope, receive, send)
    assert (door.reached, whole.reached) == (([path], []) if through_door else ([], [path]))


@pytest.fixture
def app(tmp_path: Path) -> Any:
    return host_app(Settings(data_dir=tmp_path / "data", max_body_bytes=4321))


def test_the_door_is_the_hosts_layers_around_the_proxys_in_the_stacks_order(app: Any) -> None:
    stack = app.build_middleware_stack()
    assert isinstance(stack, ProxyDoor)
    layers: list[Any] = []
    layer: Any = stack.door
    while layer is not stack.whole:
        layers.append(layer)
        layer = layer.app
    assert [type(layer) for layer in layers] == [
        VersionNegotiation,
        RequestGuard,
        CrashGuard,
        ProxyExchanges,
    ]
    guard = layers[1]
    assert (guard.max_body_bytes, guard.router) == (4321, app.router)


async def test_a_legacy_escape_in_a_proxy_path_is_the_routers_404_not_an_exchange(
    app: Any,
) -> None:
    # Not started: a request that reached the proxy's layer would crash (500) on its look-up
    # of the invocation access; rewritten by `LegacyPathIds`, no route serves it.
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://host") as client:
        answer = await client.post(CHAT.replace("/openai/", "%2Fopenai/"), json={"model": "m"})
    assert answer.status_code == 404
    assert answer.json()["error"] == "not_found"


class _Unknown:
    """A layer added to the stack that the door was never told about."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


def test_a_layer_the_door_does_not_know_stops_the_app_from_being_built(app: Any) -> None:
    # Otherwise a check added to the stack later would be skipped by every proxied exchange.
    app.add_middleware(_Unknown)
    with pytest.raises(RuntimeError, match="does not know the layer"):
        app.build_middleware_stack()
