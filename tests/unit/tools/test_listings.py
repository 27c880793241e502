"""What an agent is offered: listings from declared or derived schemas, allowlists, the digest."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, JsonValue
from typing_extensions import TypedDict

from wopeval.tools import (
    COUNTER_LISTING,
    PythonTool,
    ToolContext,
    ToolListing,
    ToolRegistry,
    derived_input_schema,
)


class Lookup(TypedDict):
    customer: str
    limit: int


class Refund(BaseModel):
    order_id: str
    amount: float


async def typed_dict_tool(args: Lookup) -> JsonValue:
    return args["customer"]


async def model_tool(args: Refund) -> JsonValue:
    return args.order_id


async def untyped_tool(args: Any) -> JsonValue:
    return args  # type: ignore[no-any-return]


async def dict_tool(args: dict[str, Any]) -> JsonValue:
    return len(args)


def test_a_python_tool_schema_comes_from_its_args_type_hint() -> None:
    schema = derived_input_schema(typed_dict_tool)
    assert schema["type"] == "object"
    assert schema["required"] == ["customer", "limit"]
    assert schema["properties"] == {
        "customer": {"title": "Customer", "type": "string"},
        "limit": {"title": "Limit", "type": "integer"},
    }
    assert derived_input_schema(model_tool)["required"] == ["order_id", "amount"]


@pytest.mark.parametrize("function", [untyped_tool, dict_tool], ids=["any", "dict"])
def test_an_args_hint_that_says_nothing_gives_any_object(function: Any) -> None:
    assert derived_input_schema(function) == {"type": "object"}


def _registry() -> ToolRegistry:
    registry = ToolRegistry()
    for name in ("orders:lookup", "orders:refund", "crm:find"):
        registry.add(PythonTool(name, untyped_tool), ToolListing(f"{name} tool"))
    return registry


def test_an_allowlist_of_names_and_globs_selects_what_is_offered() -> None:
    registry = _registry()
    assert registry.offered(None).names() == {"orders:lookup", "orders:refund", "crm:find"}
    assert registry.offered(("orders:*",)).names() == {"orders:lookup", "orders:refund"}
    assert registry.offered(("crm:find", "orders:refund")).names() == {"crm:find",
                                                                       "orders:refund"}  # fmt: skip
    assert registry.matching("nothing:*") == []


def test_the_digest_follows_names_descriptions_and_schemas_only() -> None:
    first, second = _registry(), _registry()
    assert first.offered(None).digest == second.offered(None).digest
    assert first.offered(None).digest.startswith("sha256:")
    assert first.offered(("orders:*",)).digest != first.offered(None).digest
    second.add(PythonTool("crm:update", untyped_tool), COUNTER_LISTING)
    assert second.offered(None).digest != first.offered(None).digest
    # Adding a tool no allowlist names changes nothing for that allowlist.
    assert second.offered(("orders:*",)).digest == first.offered(("orders:*",)).digest


async def test_a_tool_keeps_its_own_timeout_for_the_boundary() -> None:
    registry = ToolRegistry()
    registry.add(PythonTool("slow:one", untyped_tool), timeout_seconds=90)
    registry.add(PythonTool("fast:one", untyped_tool))
    assert registry.timeout("slow:one") == 90
    assert registry.timeout("fast:one") is None
    tool = registry.get("slow:one")
    assert tool is not None
    assert await tool.call({"x": 1}, ToolContext("t", "t/r")) == {"x": 1}
