"""What the app serves from: a started host, as its routes and middleware see it.

The app never builds a host: `wopeval.hosting` assembles one (its lease, store,
keys, catalog, engine and background tasks) for each role and hands the app a
`HostStarter`, which the app's lifespan calls, and whose host it stops.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from wopeval.api.auth import Authenticator
from wopeval.api.upstream_pools import UpstreamPools
from wopeval.engine.catalog.catalog import Catalog
from wopeval.engine.health import HealthReport
from wopeval.engine.host import Engine
from wopeval.engine.live.tail import Tails
from wopeval.settings import Settings
from wopeval.store import Store


class ServedHost(Protocol):
    """What the routes, the middleware and the dashboard read of a started host."""

    settings: Settings
    store: Store
    catalog: Catalog
    engine: Engine
    auth: Authenticator
    upstreams: UpstreamPools
    """The model proxy's connections to the invocations' model servers."""
    tails: Tails
    """The shared readers of followed runs' logs (SSE)."""

    async def health(self) -> HealthReport:
        """This process's readiness (`/host/wopeval/health`)."""
        ...

    async def stop(self) -> None:
        """Stop everything the host started; the app's lifespan calls it on shutdown."""
        ...


HostStarter = Callable[[], Awaitable[ServedHost]]
"""Starts the host an app serves from (a failure the user can fix raises one of
`api/startup.py`'s `EXPECTED`)."""
