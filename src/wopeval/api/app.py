"""The FastAPI application: routers, middleware and the error stack assembled once (G11, G12)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI
from starlette.types import Scope

from wopeval import __version__
from wopeval.api import access_log, openapi_errors
from wopeval.api import errors as error_handlers
from wopeval.api.deps import InvocationAccess
from wopeval.api.hot_reads import HotReads
from wopeval.api.json_response import JSONResponse
from wopeval.api.middleware import LegacyPathIds, VersionNegotiation
from wopeval.api.proxy_door import HostApi
from wopeval.api.request_guard import RequestGuard
from wopeval.api.routes import (
    catalog,
    discovery,
    events,
    feedback,
    health,
    host_routes,
    invocations,
    mcp,
    model_proxy,
    run_diff,
    runs,
    tasks,
)
from wopeval.api.served import HostStarter
from wopeval.api.startup import ExpectedStartupFailures, StartupFailure
from wopeval.api.ui import install as install_dashboard
from wopeval.api.ui.sessions import Clock
from wopeval.engine.health import HealthSource
from wopeval.settings import Settings

# The model proxy and the MCP endpoint first: an agent's exchanges and tool calls are the
# hottest requests the host serves, and the table is tried in order (each route a regex,
# each included router a walk of its own; the request guard walks it too): last but one,
# the MCP endpoint's match cost ~0.1 ms a walk. No other route serves a proxy or MCP path,
# nor one of theirs any other path, so every other request's match, 404 or 405 is the same.
ROUTERS = (
    model_proxy.router,
    mcp.router,
    discovery.router,
    feedback.router,
    run_diff.router,
    runs.router,
    events.router,
    catalog.router,
    host_routes.router,
    host_routes.seams_router,
    tasks.router,
    invocations.router,
    health.router,
)


def create_app(
    settings: Settings, start_host: HostStarter, *, dashboard_clock: Clock = time.monotonic
) -> FastAPI:
    """The app on `settings`; its lifespan starts the host with `start_host` (built by
    `wopeval.hosting`) and stops it. `dashboard_clock` times the dashboard's sessions and
    sign-in throttle."""
    failure = StartupFailure()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        with failure.noting():
            host = await start_host()
        app.state.host = host
        app.state.health = host.health
        app.state.invocation_access = InvocationAccess(
            host.engine.grants, host.auth, host.upstreams
        )
        app.state.mcp_sessions = mcp.McpSessions()
        try:
            async with app.state.mcp_sessions.run():
                yield
        finally:
            await host.stop()

    app = HostApi(
        title="wopeval",
        version=__version__,
        description="An OpenWOP v2 host that turns real agent runs into regression tests.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        default_response_class=JSONResponse,
    )
    for router in ROUTERS:
        app.include_router(router, include_in_schema=_described(router, settings))
    error_handlers.install(app)
    openapi_errors.install(app)
    # Invocations' MCP and model-proxy tokens are capabilities: never in a log line.
    access_log.install()
    # Each one added wraps the ones before it: the version header goes on every answer,
    # and a refused body is refused before any route, credential check or parser runs.
    # The model proxy's exchanges and the MCP endpoint's POSTs, innermost: every layer
    # below wraps them too.
    app.add_middleware(model_proxy.ProxyExchanges)
    app.add_middleware(mcp.McpExchanges)
    app.add_middleware(HotReads)
    app.add_middleware(error_handlers.CrashGuard)
    app.add_middleware(
        RequestGuard,
        max_body_bytes=settings.max_body_bytes,
        router=app.router,
        routed=answered_below_the_router,
    )
    app.add_middleware(LegacyPathIds)
    app.add_middleware(VersionNegotiation)
    app.add_middleware(ExpectedStartupFailures, failure=failure)
    # Last, so its pages and headers wrap everything above (api/ui/__init__.py).
    install_dashboard(app, settings.dashboard, dashboard_clock)
    return app


def create_worker_app(
    report: HealthSource, access: InvocationAccess, *, max_body_bytes: int
) -> tuple[FastAPI, mcp.McpSessions]:
    """A queue worker's app: its health, and the MCP endpoint and model proxy of each
    invocation it runs; with the MCP sessions, which the worker runs while it serves."""
    app = HostApi(
        title="wopeval worker",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        default_response_class=JSONResponse,
    )
    for router in (health.router, mcp.router, model_proxy.router):
        app.include_router(router)
    error_handlers.install(app)
    # An agent on a worker reaches these endpoints as it reaches the host's: the same
    # body limit and strict JSON before any token is resolved or body parsed.
    app.add_middleware(model_proxy.ProxyExchanges)
    app.add_middleware(mcp.McpExchanges)
    app.add_middleware(error_handlers.CrashGuard)
    app.add_middleware(
        RequestGuard,
        max_body_bytes=max_body_bytes,
        router=app.router,
        routed=answered_below_the_router,
    )
    sessions = mcp.McpSessions()
    app.state.health = report
    app.state.invocation_access = access
    app.state.mcp_sessions = sessions
    return app, sessions


def answered_below_the_router(scope: Scope) -> bool:
    """Whether a layer inside the request guard answers the request itself (the model
    proxy's and the MCP endpoint's): the guard takes that for the route table's match."""
    return model_proxy.serves(scope) or mcp.serves(scope)


def _described(router: APIRouter, settings: Settings) -> bool:
    """An OPTIONAL operation switched off is absent, from `/openapi.json` too."""
    if router is feedback.router:
        return settings.feedback
    return router is not run_diff.router or settings.run_diff
