"""An eval task's tool contract: recorded listings offered in place of the live servers, the
comparison with the live registry, and the plan's stored form a queue worker reads back."""

from __future__ import annotations

import pytest
from pydantic import JsonValue

from wopeval import evals
from wopeval.engine.recording.tool_contracts import RecordedTools, ToolContract, changes_since
from wopeval.tools import ToolContext, ToolListing, ToolRegistry
from wopeval.wire.task_detail import ToolChange

SCHEMA: dict[str, JsonValue] = {"type": "object", "properties": {"id": {"type": "string"}}}


class _Named:
    """A registered tool that is never called here."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def call(self, args: JsonValue, context: ToolContext) -> JsonValue:
        raise AssertionError("not called")


def registry(*tools: tuple[str, ToolListing]) -> ToolRegistry:
    found = ToolRegistry()
    for name, listing in tools:
        found.add(_Named(name), listing)
    return found


RECORDED = evals.ServerListing.of(
    "orders",
    [
        evals.ListedTool("lookup", "Look an order up.", SCHEMA),
        evals.ListedTool("refund", "Refund an order.", SCHEMA),
    ],
)


def test_an_offline_task_is_offered_the_recorded_tools_beside_the_hosts_own() -> None:
    host = registry(("shop:quote", ToolListing("Quote.", SCHEMA)))
    offered = RecordedTools((RECORDED,)).offered(host, None)
    assert [name for name, _ in offered.tools] == ["orders:lookup", "orders:refund", "shop:quote"]
    listing = dict(offered.tools)["orders:refund"]
    assert (listing.description, listing.server) == ("Refund an order.", "orders")
    assert offered.servers == (RECORDED,)
    allowed = RecordedTools((RECORDED,)).offered(host, ("orders:look*",))
    assert [name for name, _ in allowed.tools] == ["orders:lookup"]


def test_the_live_tools_are_compared_with_the_recorded_ones_under_the_allowlist() -> None:
    live = registry(
        ("orders:lookup", ToolListing("Look an order up.", SCHEMA, server="orders")),
        ("orders:refund", ToolListing("Refund an order, at most 100.", SCHEMA, server="orders")),
        ("orders:export", ToolListing("Export.", SCHEMA, server="orders")),
        ("shop:quote", ToolListing("Quote.", SCHEMA)),
    )
    assert changes_since([RECORDED], live, ("orders:*", "shop:*")) == [
        ToolChange(tool="orders:export", kind="added"),
        ToolChange(tool="orders:refund", kind="changed", fields=["description"]),
    ]
    assert changes_since([RECORDED], live, ("orders:lookup",)) == []


def test_a_stored_contract_reads_back_and_refuses_a_listing_gone_since() -> None:
    contract = ToolContract(
        served=(RECORDED,), changed=(ToolChange(tool="orders:lookup", kind="removed"),)
    )
    stored = contract.stored()
    assert stored.served == {"orders": RECORDED.digest}
    held = {RECORDED.digest: RECORDED.document()}
    assert ToolContract.from_stored(stored, held) == contract
    with pytest.raises(LookupError, match="'orders' is gone"):
        ToolContract.from_stored(stored, {})
