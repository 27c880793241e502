"""The dashboard's browser-side defences: response headers, same-origin posts, form bodies.

Every answer under `/ui` carries a strict Content-Security-Policy (scripts,
styles and everything else from this host only, no inline script or style,
no framing), `nosniff`, a same-origin referrer policy, and `no-store` (pages show a tenant's
data). A state-changing form must come from a page of this host: a browser's
`Origin` naming another site is refused before the session's CSRF token is
even looked at.
"""

from __future__ import annotations

from urllib.parse import parse_qsl

from fastapi import Request
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from wopeval.api.routing import under
from wopeval.api.ui.sessions import Session
from wopeval.wire import errors

PREFIX = "/ui"
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # Not `no-referrer`: with it a browser sends `Origin: null` on its own forms.
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
}
FORM_MEDIA_TYPE = "application/x-www-form-urlencoded"
MAX_FORM_FIELDS = 16


class UnderDashboard:
    """Pure ASGI middleware that changes only the answers under `/ui`: each one goes out
    through the send `wrapped` makes for it; every other request passes untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "") if scope["type"] == "http" else ""
        await self.app(scope, receive, self.wrapped(path, send) if under(path, PREFIX) else send)

    def wrapped(self, path: str, send: Send) -> Send:
        raise NotImplementedError


class DashboardHeaders(UnderDashboard):
    """Adds the dashboard's security headers to every answer under `/ui`."""

    def wrapped(self, path: str, send: Send) -> Send:
        static = path.startswith(PREFIX + "/static/")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in _HEADERS.items():
                    headers[name] = value
                if not static:
                    headers["Cache-Control"] = "no-store"
            await send(message)

        return send_with_headers


def require_same_origin(request: Request) -> None:
    """Refuse (403) a post a browser says came from another site."""
    origin = request.headers.get("origin")
    site = request.headers.get("sec-fetch-site")
    if origin is not None:
        own = f"{request.url.scheme}://{request.headers.get('host', '')}"
        if origin != own:
            raise errors.Forbidden("This form must be sent from a page of this host.")
    elif site is not None and site not in ("same-origin", "none"):
        raise errors.Forbidden("This form must be sent from a page of this host.")


async def form_fields(request: Request) -> dict[str, str]:
    """The fields of a urlencoded form body (the first value of each name).

    The request guard has already held the body to the host's size limit.
    """
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media != FORM_MEDIA_TYPE:
        raise errors.ValidationFailed(f"The form must be sent as {FORM_MEDIA_TYPE}.")
    body = await request.body()
    try:
        pairs = parse_qsl(
            body.decode("utf-8"),
            keep_blank_values=True,
            strict_parsing=False,
            max_num_fields=MAX_FORM_FIELDS,
        )
    except (UnicodeDecodeError, ValueError):
        raise errors.ValidationFailed("The form body could not be read.") from None
    fields: dict[str, str] = {}
    for name, value in pairs:
        fields.setdefault(name, value)
    return fields


async def require_csrf(request: Request, session: Session) -> dict[str, str]:
    """A state-changing form's fields, once it proved it came from this session's page."""
    require_same_origin(request)
    fields = await form_fields(request)
    if not session.csrf_matches(fields.get("csrf")):
        raise errors.Forbidden("This form has expired; reload the page and try again.")
    return fields
