"""What the app's route table says of a request, asked before anything reads its body, and
the `{runId:run}` path convertor that keeps the table unambiguous.

Only `BaseRoute.matches` is used, the one question every Starlette route
answers, on a scope built for the question so the request's own is untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.convertors import StringConvertor, register_url_convertor
from starlette.datastructures import URLPath
from starlette.routing import BaseRoute, Match, Router
from starlette.types import Receive, Scope, Send


class RunSegment(StringConvertor):
    """A `{runId}` segment that does not end in a custom method (`:fork`, `:pause`, …).

    `/runs/<id>:fork` is the fork of `<id>`, never a run named `<id>:fork` (a run id
    holds no `:` but in an `anon:` tenant), so `GET /runs/{runId}` does not claim that
    path and its `Allow` names only the methods the document gives it.
    """

    regex = r"(?![^/]*:[a-z][a-z-]*$)[^/]+"


RUN_SEGMENT = "run"
"""The convertor's name: `/runs/{runId:run}`."""
register_url_convertor(RUN_SEGMENT, RunSegment())

_METHODS = ("DELETE", "GET", "HEAD", "PATCH", "POST", "PUT")
"""The methods a route of this host can serve; a 405's `Allow` is drawn from them."""


def under(path: str, prefix: str) -> bool:
    """Whether `path` is `prefix` or a path below it (`/ui`, `/ui/runs`; not `/uix`)."""
    return path == prefix or path.startswith(prefix + "/")


def route_match(router: Router, scope: Scope) -> Match:
    """FULL when a route serves the request's path and method, PARTIAL when one serves its path
    with another method (405), NONE when none serves its path (404)."""
    return _match(router, _probe(scope, scope["method"]))


def allowed_methods(router: Router, scope: Scope) -> list[str]:
    """Every method some route serves at the request's path (RFC 9110 §10.2.1 `Allow`).

    The router's own 405 names only the first route it found for the path, while
    one path (`/runs`) can be served by several routes, one per method.
    """
    return [method for method in _METHODS if _match(router, _probe(scope, method)) is Match.FULL]


def _match(router: Router, probe: Scope) -> Match:
    best = Match.NONE
    for route in router.routes:
        match, _ = route.matches(probe)
        if match is Match.FULL:
            return match
        if match is Match.PARTIAL:
            best = match
    return best


def _probe(scope: Scope, method: str) -> Scope:
    """The request's target asked with `method`, in a scope of its own (matching writes to it)."""
    return {
        "type": scope["type"],
        "method": method,
        "path": scope["path"],
        "root_path": scope.get("root_path", ""),
        "headers": scope.get("headers", []),
    }


class RoutesOnFirstUse(BaseRoute):
    """The routes under one path prefix, built by `build` (their modules imported) the first
    time a request's path falls under the prefix.

    A command's embedded host serves a few wire routes and exits; the dashboard's modules,
    templates and routes cost a tenth of its start-up (docs/decisions.md, "Fast commands").
    Once built, the group answers as if its routes were the app's own: it matches a request
    as they would (FULL, PARTIAL for another method, NONE), and the router it built serves it.
    """

    def __init__(self, prefix: str, build: Callable[[], Router]) -> None:
        self.prefix = prefix
        self._build = build
        self._router: Router | None = None

    @property
    def router(self) -> Router:
        if self._router is None:
            self._router = self._build()
        return self._router

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http" or not under(scope.get("path", ""), self.prefix):
            return Match.NONE, {}
        return route_match(self.router, scope), {}

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.router.app(scope, receive, send)

    def url_path_for(self, name: str, /, **path_params: Any) -> URLPath:
        return self.router.url_path_for(name, **path_params)
