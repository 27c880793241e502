"""Pure ASGI middleware that refuses a malformed request before any route, credential check
or parser sees it: NUL characters in the target, a body over `--max-body-bytes`, and a JSON
body that is not strict JSON (`wire/strict_json.py`).

A request no route serves (an unknown path, or a known one with another method) is
left to the router's 404 or 405 without its body being read: what it sent is not
the question.

A body found strict JSON is handed on with its value (`strict_body`), so a layer inside
that reads it (the model proxy's exchanges) does not read or parse it again.

The body is counted as it arrives: a `Content-Length` over the limit is refused
before a byte is read, a streamed body as soon as it passes the limit. A
refused body is not drained, so those answers close the connection.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from starlette.datastructures import Headers
from starlette.routing import Match, Router
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from wopeval.api.errors import envelope_response
from wopeval.api.routing import route_match
from wopeval.wire import errors, strict_json

# FastAPI parses a body as JSON when it has no Content-Type or a JSON one; only
# those bodies are checked, and only on the methods whose routes read one.
_JSON_METHODS = frozenset({"POST", "PUT", "PATCH"})
_CLOSE = {"Connection": "close"}
_STRICT_BODY = "wopeval.strict_body"


@dataclass(frozen=True, slots=True)
class StrictBody:
    """A request's body as the guard read it, and the strict JSON value it holds."""

    raw: bytes
    value: Any
    """What `json.loads(raw)` gives (wire/strict_json.py: the same parse, and no value
    the stores cannot hold)."""


def strict_body(scope: Scope) -> StrictBody | None:
    """The body the request guard read and found strict JSON; None when it read none or did
    not check it (a body that is not JSON by its `Content-Type`, an app without the guard)."""
    found: StrictBody | None = scope.get(_STRICT_BODY)
    return found


class RequestGuard:
    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_bytes: int,
        router: Router,
        routed: Callable[[Scope], bool] = lambda scope: False,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.router = router
        self.routed = routed
        """True for a request a layer inside answers itself at a path and method the table
        serves (the model proxy's exchanges): the table's answer, without its walk."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        try:
            _check_target(scope)
            if _has_body(headers) and (
                self.routed(scope) or route_match(self.router, scope) is Match.FULL
            ):
                body = await self._read_body(headers, receive)
                if body is None:
                    return  # the client went away mid-body; nothing is left to answer
                if scope["method"] in _JSON_METHODS and body and _is_json(headers):
                    scope[_STRICT_BODY] = StrictBody(body, strict_json.parse_body(body))
                receive = _replay(body, receive)
        except errors.PayloadTooLarge as error:
            await envelope_response(error, _CLOSE)(scope, receive, send)
            return
        except errors.WireError as error:
            await envelope_response(error)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _read_body(self, headers: Headers, receive: Receive) -> bytes | None:
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            raise self._too_large()
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None
            chunk: bytes = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                raise self._too_large()
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    def _too_large(self) -> errors.PayloadTooLarge:
        return errors.PayloadTooLarge(
            f"The request body is larger than {self.max_body_bytes} bytes.",
            details={"maxBodyBytes": self.max_body_bytes},
        )


def _check_target(scope: Scope) -> None:
    """A NUL reaches no lookup or filter: PostgreSQL refuses it in any text parameter."""
    if "\x00" in scope["path"]:
        raise errors.ValidationFailed(
            "The request path contains a NUL character.", details={"field": "path"}
        )
    query: bytes = scope.get("query_string", b"")
    if not query:
        return
    # Decoded exactly as Starlette's QueryParams decodes it, so the name is the route's.
    for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
        if "\x00" in name or "\x00" in value:
            field = name.replace("\x00", "\\u0000")
            raise errors.ValidationFailed(
                f"Query parameter '{field}' contains a NUL character.", details={"field": field}
            )


def _has_body(headers: Headers) -> bool:
    length = headers.get("content-length")
    return "transfer-encoding" in headers or (length is not None and length != "0")


def _is_json(headers: Headers) -> bool:
    content_type = headers.get("content-type")
    if not content_type:
        return True
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


def _replay(body: bytes, receive: Receive) -> Receive:
    """Hand the app the body already read, then the client's own messages (a disconnect)."""
    pending = True

    async def replayed() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
