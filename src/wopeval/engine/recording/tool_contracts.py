"""Tool contracts (docs/agents.md, "Tool contracts"): the MCP listings a run was offered,
served again to an eval task on an offline host, or compared with the live ones.

Every invocation records, per MCP server among the tools it was offered, the
server's listing (`Journal.record_listings`, stored once per tenant and
digest). An eval task whose fixtures come from a source run is offered what
that run recorded when the host connects to no MCP server (offline), so an
unchanged agent sees the tools it was recorded with; otherwise the tools it is
offered now are compared with the recorded ones (`evals.tools_changed`) at
create, and the plan carries the changes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wopeval import evals
from wopeval.agents import AgentSpec
from wopeval.store import ListingRow, RunHandle, StoredToolContract, UnitOfWork
from wopeval.tools import Offered, ToolListing, ToolRegistry, offer, permits
from wopeval.wire.task_detail import ToolChange


@dataclass(frozen=True)
class RecordedTools:
    """MCP servers served from their recorded listings, in place of the live servers."""

    listings: tuple[evals.ServerListing, ...]
    _offered: dict[tuple[str, ...] | None, Offered] = field(
        default_factory=dict, compare=False, repr=False
    )

    def offered(self, registry: ToolRegistry, allowlist: tuple[str, ...] | None) -> Offered:
        """The registry's tools, those of the recorded servers as recorded; computed once."""
        cached = self._offered.get(allowlist)
        if cached is None:
            recorded = {listing.server: listing for listing in self.listings}
            tools = {
                name: listing
                for name, listing in registry.listings().items()
                if listing.server not in recorded
            }
            for server, listing in recorded.items():
                for name, tool in listing.canonical().items():
                    tools[name] = ToolListing(tool.description, tool.input_schema, server=server)
            servers = {**registry.servers(), **recorded}
            cached = self._offered[allowlist] = offer(tools, servers, allowlist)
        return cached


@dataclass(frozen=True)
class ToolContract:
    """What an eval task does with the MCP listings its source run recorded."""

    served: tuple[evals.ServerListing, ...] = ()
    """Offered in place of the live servers (an offline host)."""
    changed: tuple[ToolChange, ...] | None = None
    """The agent's MCP tools now against the recorded ones (None: not compared)."""

    def stored(self) -> StoredToolContract:
        """What the run's stored plan keeps: the served listings by digest, the changes."""
        return StoredToolContract(
            served={listing.server: listing.digest for listing in self.served},
            changed=None if self.changed is None else list(self.changed),
        )

    @classmethod
    def from_stored(cls, stored: StoredToolContract, held: Mapping[str, list[Any]]) -> ToolContract:
        """`stored()` read back, with the listings the store holds (`held`, by digest);
        raises LookupError when a served one is gone (erased since)."""
        rows = []
        for server, digest in sorted(stored.served.items()):
            if digest not in held:
                raise LookupError(f"the recorded tool listing of MCP server {server!r} is gone")
            rows.append(ListingRow(server, digest, held[digest]))
        changed = stored.changed
        return cls(server_listings(rows), None if changed is None else tuple(changed))


NO_CONTRACT = ToolContract()
"""A task without a source run, or whose source recorded no MCP listing."""


async def load_tool_contracts(
    uow: UnitOfWork,
    tenant: str,
    source_runs: Mapping[str, RunHandle],
    agent: AgentSpec,
    registry: ToolRegistry,
    *,
    live_tools: bool,
) -> dict[str, ToolContract]:
    """Each named task's contract, from its source's recorded listings: an offline host
    (`live_tools` False) serves them; any other compares the agent's tools with them."""
    recorded = await uow.tool_listings.of_runs(tenant, source_runs.values())
    contracts: dict[str, ToolContract] = {}
    for task_id, source in source_runs.items():
        rows = recorded.get(source.run_id)
        if not rows:
            continue
        listings = server_listings(rows)
        if live_tools:
            changed = changes_since(listings, registry, agent.tools)
            contracts[task_id] = ToolContract(changed=tuple(changed))
        else:
            contracts[task_id] = ToolContract(served=listings)
    return contracts


def server_listings(rows: Sequence[ListingRow]) -> tuple[evals.ServerListing, ...]:
    """Stored listings read back, by server."""
    return tuple(
        evals.ServerListing.from_document(row.server, row.listing)
        for row in sorted(rows, key=lambda row: row.server)
    )


def changes_since(
    recorded: Sequence[evals.ServerListing],
    registry: ToolRegistry,
    allowlist: tuple[str, ...] | None,
) -> list[ToolChange]:
    """How the MCP tools an agent with `allowlist` is offered now differ from `recorded`."""
    before = {
        name: tool
        for listing in recorded
        for name, tool in listing.canonical().items()
        if permits(allowlist, name)
    }
    now = {
        name: evals.ListedTool(name, listing.description, listing.input_schema)
        for name, listing in registry.offered(allowlist).tools
        if listing.server is not None
    }
    return evals.tools_changed(before, now)
