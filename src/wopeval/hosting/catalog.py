"""What a process can run: the seeded fixtures and the project's agents, tools and suites."""

from __future__ import annotations

import httpx

from wopeval.engine.catalog.catalog import Catalog, seed_conformance
from wopeval.engine.catalog.project import connect_mcp_servers, load_project
from wopeval.settings import Settings
from wopeval.store import Store
from wopeval.tools import COUNTER_LISTING, CounterTool, McpServers


async def load_catalog(
    settings: Settings, store: Store, http: httpx.AsyncClient, mcp: McpServers
) -> Catalog:
    """The catalog of a host or a queue worker; the project's MCP servers connect on `mcp`."""
    catalog = Catalog()
    seed_conformance(catalog)
    catalog.tools.add(CounterTool(store), COUNTER_LISTING)
    if settings.project is not None:
        servers = load_project(
            settings.project, catalog, http, tool_timeout=settings.tool_timeout_seconds
        )
        await connect_mcp_servers(servers, catalog, mcp, offline=not settings.live_tools)
    return catalog
