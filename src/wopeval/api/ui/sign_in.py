"""Signing in with an API key and out again (docs/dashboard.md "Signing in").

The key is checked by the host's `Authenticator`, exactly as a bearer key on
the wire, and is then forgotten: the browser gets only the session cookie.
Sign-in is throttled: a client address that presented too many wrong keys is
refused before its next key is even checked, and a tenant that opened too many
sessions is refused its next one, each with `429` and `Retry-After`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse

from wopeval.api.deps import HostDep
from wopeval.api.ui._render import Chrome, render
from wopeval.api.ui._route import SIGN_IN, UiRoute, safe_next
from wopeval.api.ui._security import form_fields, require_csrf, require_same_origin
from wopeval.api.ui.deps import SessionDep, session_of, sessions, throttle
from wopeval.api.ui.sessions import COOKIE, COOKIE_PATH
from wopeval.wire import errors

router = APIRouter(prefix="/ui", route_class=UiRoute, include_in_schema=False)


@dataclass(frozen=True)
class SignInView:
    next: str
    """Where the form returns to once signed in."""
    problem: str | None = None
    ended: bool = False
    """The browser came with a session that has ended (signed out, expired, host restarted)."""


@router.get("/sign-in")
async def sign_in_page(request: Request, next: str | None = None) -> Response:
    if session_of(request) is not None:
        return RedirectResponse(safe_next(next), status_code=303)
    if not request.cookies.get(COOKIE):
        return _form(SignInView(safe_next(next)))
    # A session that has ended: say so once, and forget its cookie.
    return _forget_cookie(request, _form(SignInView(safe_next(next), ended=True)))


@router.post("/sign-in")
async def sign_in(request: Request, host: HostDep) -> Response:
    require_same_origin(request)
    fields = await form_fields(request)
    target = safe_next(fields.get("next"))
    key = fields.get("key", "").strip()
    limits = throttle(request)
    # Behind a proxy on loopback, uvicorn has already put X-Forwarded-For's address here.
    address = request.client.host if request.client is not None else ""
    if wait := limits.failures.wait(address):
        return _too_many(target, wait)
    try:
        principal = host.auth.authenticate(f"Bearer {key}")
    except errors.Unauthenticated:
        limits.failures.note(address)
        return _form(SignInView(target, "That API key is not valid on this host."), status=401)
    if wait := limits.sign_ins.wait(principal.tenant):
        return _too_many(target, wait)
    limits.sign_ins.note(principal.tenant)
    store = sessions(request)
    store.close(request.cookies.get(COOKIE))  # a new sign-in never reuses an old session
    token, _ = store.open(principal)
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        COOKIE,
        token,
        max_age=math.ceil(store.lifetime),
        path=COOKIE_PATH,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


@router.post("/sign-out")
async def sign_out(request: Request, session: SessionDep) -> Response:
    await require_csrf(request, session)
    sessions(request).close(request.cookies.get(COOKIE))
    return _forget_cookie(request, RedirectResponse(SIGN_IN, status_code=303))


def _forget_cookie(request: Request, response: Response) -> Response:
    response.delete_cookie(
        COOKIE,
        path=COOKIE_PATH,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


def _too_many(target: str, wait: int) -> Response:
    problem = f"Too many sign-in attempts. Try again in {wait} seconds."
    response = _form(SignInView(target, problem), status=429)
    response.headers["Retry-After"] = str(wait)
    return response


def _form(view: SignInView, *, status: int = 200) -> Response:
    return render("sign_in.html", Chrome(None, "none", "Sign in"), view, status=status)
