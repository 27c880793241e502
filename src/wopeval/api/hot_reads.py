"""The reads a run's watchers repeat most, answered below the router.

Through FastAPI's routing, dependency solving and response wrappers an answer costs
several times the store read behind it (bench/read_path.py, docs/decisions.md "Hot
reads"). This pure-ASGI layer sits inside the host's own middlewares (the version header,
legacy ids, the request guard, the crash guard), so what they do to every answer they
still do, and answers itself:

- `GET /runs/{runId}` when it succeeds: the same credential check, the same tenant-bound
  run id, the same store read, the same `JSONResponse` (the route's own `run_answer`,
  which answers a repeat from what it kept since the run last changed,
  engine/live/read_cache.py);
- a poll of a run's events, or a page of the run list, asked before and kept since
  (the same query string, the caller's own run or tenant): the kept bytes. One asked
  for the first time, or since what it shows changed, is the route's.

A refusal of any kind — no key, a malformed or another tenant's id, no such run — is
passed on to the route, which answers it in the wire's envelope exactly as before; such
a request costs the checks twice.
"""

from __future__ import annotations

import re

from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from wopeval.api.deps import path_run_id
from wopeval.api.middleware import header
from wopeval.api.routes.events import poll_view
from wopeval.api.routes.runs import list_view, run_answer
from wopeval.api.served import ServedHost
from wopeval.engine.live.read_cache import tenant_scope
from wopeval.wire import errors

_RUN_PATH = re.compile(r"/runs/([^/]+)")
"""The route's own path, `/runs/{runId}` (a path parameter is one segment)."""
_POLL_PATH = re.compile(r"/runs/([^/]+)/events/poll")


class HotReads:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        host: ServedHost | None = getattr(scope["app"].state, "host", None)
        if scope["type"] == "http" and scope["method"] == "GET" and host is not None:
            answer = await self._answer(host, scope)
            if answer is not None:
                await answer(scope, receive, send)
                return
        await self.app(scope, receive, send)

    @staticmethod
    async def _answer(host: ServedHost, scope: Scope) -> Response | None:
        """The answer to a read this layer answers itself; None: the route answers it."""
        path = scope["path"]
        run = _RUN_PATH.fullmatch(path)
        poll = _POLL_PATH.fullmatch(path)
        cache = host.engine.notifier.cache
        if run is None and (cache is None or (poll is None and path != "/runs")):
            return None
        try:
            principal = host.auth.authenticate(header(scope, b"authorization"))
            if run is not None:
                return await run_answer(host.engine, principal, run.group(1))
            if cache is None:
                return None
            if poll is not None:
                where = path_run_id(poll.group(1), principal)
                view = poll_view(scope["query_string"])
            else:
                where, view = tenant_scope(principal.tenant), list_view(scope["query_string"])
            kept = cache.get(principal.tenant, where, view)
        except errors.WireError:
            return None  # the route answers a refusal, in its envelope
        # A poll or a page asked for the first time, or since it changed, is the route's.
        return None if kept is None else Response(kept, media_type="application/json")
