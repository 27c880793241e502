"""The FastAPI application: routers, middleware and the error stack assembled once (G11, G12)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from wopeval import __version__
from wopeval.api import errors as error_handlers
from wopeval.api import openapi_errors
from wopeval.api.host import SERVING, Host, Role
from wopeval.api.middleware import LegacyPathIds, VersionNegotiation
from wopeval.api.request_guard import RequestGuard
from wopeval.api.routes import catalog, discovery, events, host_routes, mcp, runs, tasks
from wopeval.api.ui import install as install_dashboard
from wopeval.settings import Settings
from wopeval.store import Lease

ROUTERS = (
    discovery.router,
    runs.router,
    events.router,
    catalog.router,
    host_routes.router,
    host_routes.seams_router,
    tasks.router,
    mcp.router,
)


def create_app(settings: Settings, *, role: Role = SERVING, lease: Lease | None = None) -> FastAPI:
    """The app; its lifespan starts the host (see `Host.start` for `role` and `lease`)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        host = await Host.start(settings, role=role, lease=lease)
        app.state.host = host
        app.state.mcp_sessions = mcp.session_manager()
        try:
            async with app.state.mcp_sessions.run():
                yield
        finally:
            await host.stop()

    app = FastAPI(
        title="wopeval",
        version=__version__,
        description="An OpenWOP v2 host that turns real agent runs into regression tests.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    for router in ROUTERS:
        app.include_router(router)
    install_dashboard(app)
    error_handlers.install(app)
    openapi_errors.install(app)
    # Invocations' MCP tokens are capabilities: never in a log line.
    logging.getLogger("uvicorn.access").addFilter(mcp.REDACT_TOKENS)
    # Each one added wraps the ones before it: the version header goes on every answer,
    # and a refused body is refused before any route, credential check or parser runs.
    app.add_middleware(error_handlers.CrashGuard)
    app.add_middleware(RequestGuard, max_body_bytes=settings.max_body_bytes)
    app.add_middleware(LegacyPathIds)
    app.add_middleware(VersionNegotiation)
    return app
