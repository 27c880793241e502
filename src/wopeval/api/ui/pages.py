"""The dashboard's pages as one router: its page routes, its static files and the answer to
every other path under `/ui`. Built on the first request under `/ui` (api/ui/__init__.py)."""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter
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
from wopeval.api.ui._route import fallback

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


def dashboard_router() -> APIRouter:
    dashboard = APIRouter()
    for router in ROUTERS:
        dashboard.include_router(router)
    static = resources.files("wopeval.api.ui").joinpath("static")
    dashboard.mount("/ui/static", StaticFiles(directory=str(static)), name="ui-static")
    # Last: it answers every other path under /ui (a page, never the wire's envelope).
    dashboard.include_router(
        fallback(Router(routes=[r for router in ROUTERS for r in router.routes]))
    )
    return dashboard
