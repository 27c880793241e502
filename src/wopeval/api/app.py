"""The FastAPI application: routers, middleware and the error stack assembled once (G11, G12)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from wopeval import __version__
from wopeval.api import errors as error_handlers
from wopeval.api.host import SERVING, Host, Role
from wopeval.api.middleware import LegacyPathIds, VersionNegotiation
from wopeval.api.routes import catalog, discovery, events, host_routes, runs
from wopeval.settings import Settings
from wopeval.store import Lease


def create_app(settings: Settings, *, role: Role = SERVING, lease: Lease | None = None) -> FastAPI:
    """The app; its lifespan starts the host (see `Host.start` for `role` and `lease`)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        host = await Host.start(settings, role=role, lease=lease)
        app.state.host = host
        try:
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
    ):
        app.include_router(router)
    error_handlers.install(app)
    app.add_middleware(VersionNegotiation)
    app.add_middleware(LegacyPathIds)
    return app
