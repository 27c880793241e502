"""How a dashboard route answers a refusal: the wire's status and code, as a page.

A page reads through the same engine calls as the wire routes, so it is
refused by the same rules (a foreign tenant's run 403, an unknown one 404, bad
input 400). The answer is that status with a page saying the code and the
message, never echoing the id asked for: two refusals that are alike on the
wire are alike here, byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import urlencode

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse
from fastapi.routing import APIRoute

from wopeval.api.errors import validation_refusal
from wopeval.api.ui._render import Chrome, Refusal, render
from wopeval.api.ui.deps import SignInRequired, session_of
from wopeval.wire import errors

SIGN_IN = "/ui/sign-in"


class UiRoute(APIRoute):
    """A route whose refusals are pages, and whose signed-out callers go to the sign-in page."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def answer(request: Request) -> Response:
            try:
                return await handler(request)
            except SignInRequired:
                return sign_in_redirect(request)
            except RequestValidationError as invalid:
                return refusal_page(request, validation_refusal(list(invalid.errors())))
            except errors.WireError as refused:
                return refusal_page(request, refused)

        return answer


def refusal_page(request: Request, refused: errors.WireError) -> Response:
    refusal = Refusal(refused.status, refused.code.value, refused.message)
    chrome = Chrome(session_of(request), "none", f"{refused.status} {refused.code.value}")
    return render("refusal.html", chrome, refusal, status=refused.status)


def sign_in_redirect(request: Request) -> Response:
    """To the sign-in page, which comes back here (GET) after signing in."""
    back = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    target = SIGN_IN if request.method != "GET" else f"{SIGN_IN}?{urlencode({'next': back})}"
    return RedirectResponse(target, status_code=303)


def safe_next(value: str | None) -> str:
    """Where to go after signing in: a dashboard path only, never another site."""
    if value and value.startswith("/ui/") and not value.startswith("//") and "\\" not in value:
        return value
    return "/ui/runs"
