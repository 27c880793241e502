"""The dashboard: server-rendered pages under `/ui/` on the host's own port (docs/dashboard.md).

Jinja2 templates and static CSS/JS ship in this package; nothing is built
and nothing is fetched from elsewhere. Pages read through the same engine and
store calls as the wire routes, in the signed-in tenant. The routes stay out
of `/openapi.json`: they are pages for people, not part of the wire.
"""

from __future__ import annotations

from importlib import resources

from fastapi import FastAPI
from starlette.routing import Router
from starlette.staticfiles import StaticFiles

from wopeval.api.ui import (
    compare_page,
    eval_page,
    labels,
    live,
    run_page,
    runs_page,
    sign_in,
    suites_page,
)
from wopeval.api.ui._route import EnvelopePages, fallback
from wopeval.api.ui._security import DashboardHeaders
from wopeval.api.ui.sessions import Clock, Sessions
from wopeval.api.ui.throttle import SignInThrottle
from wopeval.settings import DashboardSettings

ROUTERS = (
    sign_in.router,
    runs_page.router,
    run_page.router,
    eval_page.router,
    labels.router,
    compare_page.router,
    suites_page.router,
    live.router,
)


def install(app: FastAPI, settings: DashboardSettings, clock: Clock) -> None:
    """Mount the dashboard on `app`: its pages, its static files, its sessions, its sign-in
    throttle, its headers and its refusal pages; `clock` times sessions and the throttle.

    Called after the host's own middleware is added, so the dashboard's two wrap it: a
    refusal under `/ui` that the request guard answers still gets a page and the headers.
    """
    app.state.ui_sessions = Sessions(settings, clock)
    app.state.ui_throttle = SignInThrottle(settings, clock)
    for router in ROUTERS:
        app.include_router(router)
    static = resources.files("wopeval.api.ui").joinpath("static")
    app.mount("/ui/static", StaticFiles(directory=str(static)), name="ui-static")
    # Last: it answers every other path under /ui (a page, never the wire's envelope).
    app.include_router(fallback(Router(routes=[r for router in ROUTERS for r in router.routes])))
    app.add_middleware(DashboardHeaders)
    app.add_middleware(EnvelopePages)
