"""`conformance.eval:counter` (RFC 0244 G2): a live answer that changes with every `inc`."""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue

from wopeval.store import Store
from wopeval.tools.base import ToolContext, ToolFailure, ToolListing

COUNTER_TOOL = "conformance.eval:counter"
COUNTER_LISTING = ToolListing(
    "A per-tenant counter: `inc` adds one to `key` and returns the count, `read` returns it.",
    {
        "type": "object",
        "properties": {"op": {"enum": ["inc", "read"]}, "key": {"type": "string"}},
        "required": ["op", "key"],
        "additionalProperties": False,
    },
)


class CounterTool:
    name = COUNTER_TOOL

    def __init__(self, store: Store) -> None:
        self._store = store

    async def call(self, args: JsonValue, context: ToolContext) -> JsonValue:
        op, key = _parse(args)
        # Its own transaction: a live side effect is real the moment it happens.
        async with self._store.transaction() as uow:
            if op == "inc":
                count = await uow.counters.increment(context.tenant, key)
            else:
                count = await uow.counters.read(context.tenant, key)
        return {"key": key, "count": count}


def _parse(args: Any) -> tuple[str, str]:
    if not isinstance(args, dict) or set(args) != {"op", "key"}:
        raise ToolFailure("invalid_args", "counter takes exactly {op, key}")
    op, key = args["op"], args["key"]
    if op not in ("inc", "read"):
        raise ToolFailure("invalid_args", "op must be 'inc' or 'read'")
    if not isinstance(key, str) or not 0 < len(key) <= 256:
        raise ToolFailure("invalid_args", "key must be a string of 1..256 characters")
    return op, key
