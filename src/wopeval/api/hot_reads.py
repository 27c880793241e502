"""`GET /runs/{runId}` answered below the router: the read a run's watchers repeat most.

Through FastAPI's routing, dependency solving and response wrappers that answer cost
several times the store read behind it (bench/read_path.py, docs/decisions.md "Hot
reads"). This pure-ASGI layer sits inside the host's own middlewares (the version header,
legacy ids, the request guard, the crash guard), so what they do to every answer they
still do, and answers a successful read itself: the same credential check, the same
tenant-bound run id, the same store read, the same `JSONResponse` (the route's own
`run_answer`, which answers a repeat from what it kept since the run last changed,
engine/read_cache.py). A refusal of any kind — no key, a malformed
or another tenant's id, no such run — is passed on to the route, which answers it in
the wire's envelope exactly as before; such a request costs the checks twice.
"""

from __future__ import annotations

import re

from starlette.types import ASGIApp, Receive, Scope, Send

from wopeval.api.host import Host
from wopeval.api.middleware import header
from wopeval.api.routes.runs import run_answer
from wopeval.wire import errors

_RUN_PATH = re.compile(r"/runs/([^/]+)")
"""The route's own path, `/runs/{runId}` (a path parameter is one segment)."""


class HotReads:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            match = _RUN_PATH.fullmatch(scope["path"])
            host: Host | None = getattr(scope["app"].state, "host", None)
            if match is not None and host is not None:
                try:
                    principal = host.auth.authenticate(header(scope, b"authorization"))
                    answer = await run_answer(host.engine, principal, match.group(1))
                except errors.WireError:
                    pass  # the route answers a refusal, in its envelope
                else:
                    await answer(scope, receive, send)
                    return
        await self.app(scope, receive, send)
