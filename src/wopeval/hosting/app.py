"""The app of an API process: `api`'s app, serving from a `Host` its lifespan starts."""

from __future__ import annotations

import time

from fastapi import FastAPI

from wopeval.api.app import create_app
from wopeval.api.ui.sessions import Clock
from wopeval.engine.runs.run_queue import QueueFactory
from wopeval.hosting.host import SERVING, Host, Role
from wopeval.settings import Settings
from wopeval.store import Lease


def host_app(
    settings: Settings,
    *,
    role: Role = SERVING,
    lease: Lease | None = None,
    queue: QueueFactory | None = None,
    dashboard_clock: Clock = time.monotonic,
) -> FastAPI:
    """The app on `settings` (see `Host.start` for `role`, `lease` and `queue`;
    `create_app` for `dashboard_clock`)."""

    async def start_host() -> Host:
        return await Host.start(settings, role=role, lease=lease, queue=queue)

    return create_app(settings, start_host, dashboard_clock=dashboard_clock)
