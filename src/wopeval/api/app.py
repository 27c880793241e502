"""The FastAPI application: routers, middleware and the error stack assembled once (G11, G12)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from wopeval import __version__
from wopeval.api import errors as error_handlers
from wopeval.api.host import Host
from wopeval.api.middleware import LegacyPathIds, VersionNegotiation
from wopeval.api.routes import catalog, discovery, events, host_routes, mcp, runs, tasks
from wopeval.settings import Settings


def create_app(settings: Settings) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        host = await Host.start(settings)
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
    for router in (
        discovery.router,
        runs.router,
        events.router,
        catalog.router,
        host_routes.router,
        host_routes.seams_router,
        tasks.router,
        mcp.router,
    ):
        app.include_router(router)
    error_handlers.install(app)
    # Invocations' MCP tokens are capabilities: never in a log line.
    logging.getLogger("uvicorn.access").addFilter(mcp.REDACT_TOKENS)
    app.add_middleware(VersionNegotiation)
    app.add_middleware(LegacyPathIds)
    return app
