"""Tool contracts as pure values: a server's listing, its digest, and what changed since."""

from __future__ import annotations

from pydantic import JsonValue

from wopeval import evals
from wopeval.wire.task_detail import ToolChange

LOOKUP_SCHEMA: dict[str, JsonValue] = {
    "type": "object",
    "properties": {"key": {"type": "string"}},
    "required": ["key"],
}


def tool(
    name: str, description: str = "", schema: dict[str, JsonValue] | None = None
) -> evals.ListedTool:
    return evals.ListedTool(name, description, schema if schema is not None else LOOKUP_SCHEMA)


def test_a_listing_is_kept_by_name_and_its_digest_ignores_order_and_server() -> None:
    one = evals.ServerListing.of("orders", [tool("refund"), tool("lookup")])
    other = evals.ServerListing.of("billing", [tool("lookup"), tool("refund")])
    assert [t.name for t in one.tools] == ["lookup", "refund"]
    assert one.digest == other.digest
    assert one.digest == evals.args_hash(one.document())
    again = evals.ServerListing.from_document("orders", one.document())
    assert again == one
    assert again.digest == one.digest
    assert list(one.canonical()) == ["orders:lookup", "orders:refund"]
    changed = evals.ServerListing.of("orders", [tool("refund"), tool("lookup", "Looks up.")])
    assert changed.digest != one.digest


def test_each_tool_added_removed_or_changed_is_named_with_what_changed() -> None:
    key_order: dict[str, JsonValue] = {
        "required": ["key"],
        "properties": {"key": {"type": "string"}},
        "type": "object",
    }
    recorded = {
        "o:lookup": tool("lookup", "Look up."),
        "o:refund": tool("refund", "Refund."),
        "o:gone": tool("gone"),
        "o:same": tool("same", "Same.", key_order),
    }
    offered = {
        "o:lookup": tool("lookup", "Look up.", {"type": "object"}),
        "o:refund": tool("refund", "Refund it."),
        "o:new": tool("new"),
        "o:same": tool("same", "Same."),
    }
    assert evals.tools_changed(recorded, offered) == [
        ToolChange(tool="o:gone", kind="removed"),
        ToolChange(tool="o:lookup", kind="changed", fields=["inputSchema"]),
        ToolChange(tool="o:new", kind="added"),
        ToolChange(tool="o:refund", kind="changed", fields=["description"]),
    ]
    assert evals.tools_changed(recorded, recorded) == []


def test_changes_read_as_one_line() -> None:
    changes = [
        ToolChange(tool="o:gone", kind="removed"),
        ToolChange(tool="o:lookup", kind="changed", fields=["description", "inputSchema"]),
    ]
    assert evals.describe_tool_changes(changes) == (
        "o:gone removed, o:lookup changed (description, inputSchema)"
    )
