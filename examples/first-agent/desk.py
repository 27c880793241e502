"""A support desk's first agent: refund small delivered orders, escalate the rest.

It has three bugs, one per failing task of `suites/desk.json`:

1. Its decision names the amount `amount_eur`; the suite expects `amount` (`small-refund`).
2. A case that names no order raises `KeyError` (`no-order`).
3. For an express order it asks the shop with an `express` argument that no
   recording has, so the call misses its fixture (`express`).
"""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue

from wopeval.agents import AgentContext, ToolCallError

REFUND_LIMIT = 100


async def decide(context: AgentContext) -> JsonValue:
    case: Any = context.input
    query: dict[str, JsonValue] = {"order_id": case["order"]}  # bug 2: no "order" in the case
    if case.get("express"):
        query["express"] = True  # bug 3: an argument the recordings do not have
    try:
        order: Any = await context.call_tool("shop:order", query)
    except ToolCallError as failure:
        return {"action": "escalate", "error": failure.code}
    if order["status"] == "delivered" and order["total"] <= REFUND_LIMIT:
        return {"action": "refund", "amount_eur": order["total"]}  # bug 1: the field is "amount"
    return {"action": "escalate", "status": order["status"]}
