"""The host's FastAPI app with a door of its own for the model proxy's exchanges (issue 29).

A proxied exchange is the hottest request the host serves, and the only layers that do
anything to it are the host's own: the version header, the request guard (NUL, size
limit, strict JSON), the crash guard and the proxy's layer, which answers it. The rest of
the stack Starlette and FastAPI build around them passes it on untouched: FastAPI's
server-error and exception-telemetry layers and its body limit (the crash guard answers
or ends whatever the exchange raises first; the host sets no FastAPI body limit), the
dashboard's two (only `/ui`), the start-up failures' (only the lifespan), the legacy
ids' (only a target with a `%2F`), the hot reads (`GET`s) and the MCP endpoint's layer
(its own paths): nine coroutine frames each exchange is started and resumed through, and
a send wrapper (the server-error layer's) each message of its answer goes through.

So the stack's top is a door: a request the proxy's layer claims goes through those
four layers alone, built from the app's own middleware list (the same classes, options
and order as in the whole stack); every other request, and one whose target holds a
legacy `%2F` (rewritten by `LegacyPathIds` into a path the proxy does not serve), goes
through the whole stack as before. FastAPI's own per-request telemetry is above the
stack, so an exchange is traced as any request is.
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from wopeval.api.errors import CrashGuard
from wopeval.api.hot_reads import HotReads
from wopeval.api.middleware import LegacyPathIds, VersionNegotiation, legacy_escaped
from wopeval.api.request_guard import RequestGuard
from wopeval.api.routes.mcp import McpExchanges
from wopeval.api.routes.model_proxy import ProxyExchanges, serves
from wopeval.api.startup import ExpectedStartupFailures
from wopeval.api.ui._envelope import EnvelopePages
from wopeval.api.ui._security import DashboardHeaders

DOOR_LAYERS: tuple[object, ...] = (VersionNegotiation, RequestGuard, CrashGuard, ProxyExchanges)
"""The layers that do something to a proxied exchange; each wraps it through the door too."""

PASSING_LAYERS: frozenset[object] = frozenset(
    {
        EnvelopePages,
        DashboardHeaders,
        ExpectedStartupFailures,
        LegacyPathIds,
        HotReads,
        McpExchanges,
    }
)
"""The layers that pass a proxied exchange on untouched (a legacy `%2F`, which
`LegacyPathIds` rewrites, never takes the door). A layer in neither list stops the app
from being built: a check added to the stack later must say which it is, not be skipped
by the proxy's exchanges unseen."""


class HostApi(FastAPI):
    """FastAPI, its middleware stack topped with the proxy's door."""

    def build_middleware_stack(self) -> ASGIApp:
        whole = super().build_middleware_stack()
        door: ASGIApp = whole  # reached by nothing the proxy's layer claims
        for middleware in reversed(self.user_middleware):
            if middleware.cls not in DOOR_LAYERS and middleware.cls not in PASSING_LAYERS:
                raise RuntimeError(
                    f"the model proxy's door does not know the layer {middleware.cls!r}:"
                    " add it to DOOR_LAYERS or PASSING_LAYERS (api/proxy_door.py)"
                )
            if middleware.cls in DOOR_LAYERS:
                door = middleware.cls(door, *middleware.args, **middleware.kwargs)
        return ProxyDoor(door, whole)


class ProxyDoor:
    """Pure ASGI: a request the proxy's layer answers through `door`, any other through
    `whole`."""

    def __init__(self, door: ASGIApp, whole: ASGIApp) -> None:
        self.door = door
        self.whole = whole

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if serves(scope) and not legacy_escaped(scope):
            await self.door(scope, receive, send)
        else:
            await self.whole(scope, receive, send)
