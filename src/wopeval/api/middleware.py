"""Pure ASGI middleware (G12): version negotiation and the legacy `%2F` path ids."""

from __future__ import annotations

import re
from urllib.parse import unquote_to_bytes

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from wopeval.api.errors import envelope_response
from wopeval.wire import errors

SERVED_MAJOR = 2
PROTOCOL_VERSION = "2.46"
VERSION_HEADER = "OpenWOP-Version"

_VERSION = re.compile(r"^\s*(0|[1-9][0-9]*)(?:\.(0|[1-9][0-9]*))?\s*$")


class VersionNegotiation:
    """Serve major 2, refuse another major with 406 (versioning.md §1.1), name the contract."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        requested = header(scope, b"openwop-version")
        if requested is not None:
            match = _VERSION.match(requested)
            # A malformed value selects nothing; only a well-formed other major is refused.
            if match and int(match.group(1)) != SERVED_MAJOR:
                refusal = errors.ProtocolVersionUnsupported(
                    f"This host serves OpenWOP major {SERVED_MAJOR} only.",
                    details={"protocolVersions": [PROTOCOL_VERSION]},
                )
                answer = envelope_response(refusal, {VERSION_HEADER: PROTOCOL_VERSION})
                await answer(scope, receive, send)
                return

        async def send_with_version(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)[VERSION_HEADER] = PROTOCOL_VERSION
            await send(message)

        await self.app(scope, receive, send_with_version)


class LegacyPathIds:
    """Keeps a legacy `%2F` inside one path segment by rewriting it to the `~2F` projection.

    The server percent-decodes `path`, which would split `acme%2Fr1` into two
    segments; `raw_path` still holds the escape, so the projection is rebuilt
    from it (identity.md §5: both forms are accepted).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if legacy_escaped(scope):
            fixed = re.sub(rb"%2[fF]", b"~2F", scope["raw_path"].split(b"?", 1)[0])
            scope = dict(scope)
            scope["raw_path"] = fixed
            scope["path"] = unquote_to_bytes(fixed).decode("utf-8", errors="replace")
        await self.app(scope, receive, send)


def legacy_escaped(scope: Scope) -> bool:
    """Whether the request's target holds a legacy `%2F`, which `LegacyPathIds` rewrites."""
    raw: bytes | None = scope.get("raw_path") if scope["type"] == "http" else None
    return raw is not None and b"%2f" in raw.lower()


def header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return str(value.decode("latin-1"))
    return None
