"""The dashboard's dependencies: its session store and sign-in throttle, and the signed-in
session of a request."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from wopeval.api.ui.sessions import COOKIE, Session, Sessions
from wopeval.api.ui.throttle import SignInThrottle


class SignInRequired(Exception):
    """The request has no live session: pages answer with the sign-in page."""


def sessions(request: Request) -> Sessions:
    store: Sessions = request.app.state.ui_sessions
    return store


def throttle(request: Request) -> SignInThrottle:
    found: SignInThrottle = request.app.state.ui_throttle
    return found


def session_of(request: Request) -> Session | None:
    """The request's live session, if it has one."""
    return sessions(request).get(request.cookies.get(COOKIE))


def signed_in(request: Request) -> Session:
    found = session_of(request)
    if found is None:
        raise SignInRequired()
    return found


SessionDep = Annotated[Session, Depends(signed_in)]
