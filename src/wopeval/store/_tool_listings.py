"""The MCP tool listings runs were offered: each listing kept once per tenant, by its digest."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, delete, exists, select
from sqlalchemy.ext.asyncio import AsyncConnection

from wopeval.store._rows import ignoring_duplicates
from wopeval.store._runs import RunHandle
from wopeval.store.tables import run_tool_listings, runs, tool_listings


@dataclass(frozen=True, slots=True)
class ListingRow:
    """A run was offered this listing of MCP server `server`."""

    server: str
    digest: str
    listing: list[Any]
    """The listing as stored: `[{name, description, inputSchema}]` by name."""


class ToolListingsRepo:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def keep(self, uses: Sequence[tuple[str, ListingRow]]) -> None:
        """Record each `(run_id, use)`; a listing the tenant holds already is not stored again,
        and a run keeps the first listing it was offered of each server."""
        if not uses:
            return
        listings = {(_tenant_of(run_id), use.digest): use.listing for run_id, use in uses}
        await self._connection.execute(
            ignoring_duplicates(self._connection, tool_listings),
            [
                {"tenant": tenant, "digest": digest, "listing": listing}
                for (tenant, digest), listing in listings.items()
            ],
        )
        offered = {(run_id, use.server): use.digest for run_id, use in uses}
        await self._connection.execute(
            ignoring_duplicates(self._connection, run_tool_listings),
            [
                {"run_id": run_id, "server": server, "digest": digest}
                for (run_id, server), digest in offered.items()
            ],
        )

    async def of_runs(
        self, tenant: str, offered_to: Collection[RunHandle]
    ) -> dict[str, list[ListingRow]]:
        """The listings each of the tenant's runs was offered, by run id and server (runs with
        none absent)."""
        run_ids = [run.run_id for run in offered_to]
        if not run_ids:
            # An eval run with no fixture source (most are) asks for none: no query.
            return {}
        result = await self._connection.execute(
            select(
                run_tool_listings.c.run_id,
                run_tool_listings.c.server,
                run_tool_listings.c.digest,
                tool_listings.c.listing,
            )
            .join(runs, and_(runs.c.run_id == run_tool_listings.c.run_id, runs.c.tenant == tenant))
            .join(
                tool_listings,
                and_(
                    tool_listings.c.digest == run_tool_listings.c.digest,
                    tool_listings.c.tenant == tenant,
                ),
            )
            .where(run_tool_listings.c.run_id.in_(run_ids))
            .order_by(run_tool_listings.c.run_id, run_tool_listings.c.server)
        )
        found: dict[str, list[ListingRow]] = {}
        for row in result:
            found.setdefault(row.run_id, []).append(ListingRow(row.server, row.digest, row.listing))
        return found

    async def by_digests(self, tenant: str, digests: Collection[str]) -> dict[str, list[Any]]:
        """The tenant's listings with these digests (those it still holds)."""
        if not digests:
            return {}
        result = await self._connection.execute(
            select(tool_listings.c.digest, tool_listings.c.listing).where(
                tool_listings.c.tenant == tenant, tool_listings.c.digest.in_(list(digests))
            )
        )
        return {row.digest: row.listing for row in result}

    async def copy(self, source: RunHandle, target_run_id: str) -> None:
        """Give a replay the listings of the run it re-emits."""
        result = await self._connection.execute(
            select(run_tool_listings.c.server, run_tool_listings.c.digest).where(
                run_tool_listings.c.run_id == source.run_id
            )
        )
        rows = [{"run_id": target_run_id, **row} for row in result.mappings()]
        if rows:
            await self._connection.execute(run_tool_listings.insert(), rows)

    async def erase(self, tenant: str, run_id: str) -> None:
        """Forget what the run was offered, and every listing of the tenant no run holds now."""
        offered = await self._connection.execute(
            select(run_tool_listings.c.digest).where(run_tool_listings.c.run_id == run_id)
        )
        digests = set(offered.scalars())
        if not digests:
            return
        await self._connection.execute(
            delete(run_tool_listings).where(run_tool_listings.c.run_id == run_id)
        )
        held = (
            select(run_tool_listings.c.run_id)
            .join(runs, runs.c.run_id == run_tool_listings.c.run_id)
            .where(
                run_tool_listings.c.digest == tool_listings.c.digest,
                runs.c.tenant == tenant,
            )
        )
        await self._connection.execute(
            delete(tool_listings).where(
                tool_listings.c.tenant == tenant,
                tool_listings.c.digest.in_(digests),
                ~exists(held),
            )
        )

    async def run_ids_older_than(self, cutoff: datetime) -> list[str]:
        """Terminal runs finished before `cutoff` that still hold a listing (retention)."""
        result = await self._connection.execute(
            select(run_tool_listings.c.run_id)
            .join(runs, runs.c.run_id == run_tool_listings.c.run_id)
            .where(runs.c.completed_at < cutoff)
            .group_by(run_tool_listings.c.run_id)
        )
        return list(result.scalars())


def _tenant_of(run_id: str) -> str:
    """A run id's tenant (run ids are `<tenant>/<32 hex>`)."""
    return run_id.partition("/")[0]
