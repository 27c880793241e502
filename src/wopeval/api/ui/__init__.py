"""The dashboard: server-rendered pages under `/ui/` on the host's own port (docs/dashboard.md).

Jinja2 templates and static CSS/JS ship in this package; nothing is built
and nothing is fetched from elsewhere. Pages read through the same engine and
store calls as the wire routes, in the signed-in tenant. The routes stay out
of `/openapi.json`: they are pages for people, not part of the wire.
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.routing import Router

from wopeval.api.routing import RoutesOnFirstUse
from wopeval.api.ui._envelope import EnvelopePages
from wopeval.api.ui._security import PREFIX, DashboardHeaders
from wopeval.api.ui.sessions import Clock, Sessions
from wopeval.api.ui.throttle import SignInThrottle
from wopeval.settings import DashboardSettings


def install(app: FastAPI, settings: DashboardSettings, clock: Clock) -> None:
    """Mount the dashboard on `app`: its pages, its static files, its sessions, its sign-in
    throttle, its headers and its refusal pages; `clock` times sessions and the throttle.

    The pages are built on the first request under `/ui` (api/ui/pages.py): a command's
    embedded host never serves one. Called after the host's own middleware is added, so the
    dashboard's two wrap it: a refusal under `/ui` that the request guard answers still gets
    a page and the headers.
    """
    app.state.ui_sessions = Sessions(settings, clock)
    app.state.ui_throttle = SignInThrottle(settings, clock)
    app.router.routes.append(RoutesOnFirstUse(PREFIX, _dashboard_router))
    app.add_middleware(DashboardHeaders)
    app.add_middleware(EnvelopePages)


def _dashboard_router() -> Router:
    from wopeval.api.ui.pages import dashboard_router

    return dashboard_router()
