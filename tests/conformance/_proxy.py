"""A thin HTTP proxy in front of a real wopeval host that can alter one behaviour.

A `Behaviour` sees each request before it is forwarded and each response body
before it is returned; the base class changes nothing and records what passed,
so a test can also check what the conformance runner sent.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

_HOP_BY_HOP = {"host", "content-length", "transfer-encoding", "connection", "content-encoding"}


@dataclass(frozen=True)
class Forward:
    """One request as the proxy forwards it."""

    method: str
    path: str
    """The raw path, projections such as `~2F` untouched."""
    query: str
    headers: dict[str, str]
    """Lower-cased names."""
    body: bytes

    def json(self) -> Any:
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None

    def with_json(self, document: Any) -> Forward:
        return replace(self, body=json.dumps(document).encode())


@dataclass
class Behaviour:
    """Forward everything unchanged; subclasses override one of the two hooks."""

    seen: list[Forward] = field(default_factory=list)

    def request(self, forward: Forward) -> Forward:
        return forward

    def response(self, forward: Forward, status: int, body: bytes) -> bytes:
        return body


def proxy_app(upstream: str, behaviour: Behaviour) -> Starlette:
    clients: list[httpx.AsyncClient] = []

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with httpx.AsyncClient(base_url=upstream, timeout=60.0, trust_env=False) as client:
            clients.append(client)
            yield

    async def forward(request: Request) -> Response:
        raw_path = request.scope.get("raw_path") or request.url.path.encode()
        incoming = Forward(
            method=request.method,
            path=raw_path.decode("latin-1"),
            query=request.url.query,
            headers={k: v for k, v in request.headers.items() if k not in _HOP_BY_HOP},
            body=await request.body(),
        )
        outgoing = behaviour.request(incoming)
        behaviour.seen.append(outgoing)
        url = outgoing.path + (f"?{outgoing.query}" if outgoing.query else "")
        answer = await clients[0].request(
            outgoing.method, url, headers=outgoing.headers, content=outgoing.body
        )
        body = behaviour.response(outgoing, answer.status_code, answer.content)
        headers = {k: v for k, v in answer.headers.items() if k.lower() not in _HOP_BY_HOP}
        return Response(body, status_code=answer.status_code, headers=headers)

    methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
    return Starlette(routes=[Route("/{path:path}", forward, methods=methods)], lifespan=lifespan)
