"""A python-lane agent whose tools come from the orders MCP server (`orders:lookup_order`, …).

It reaches them with `context.call_tool`, through the host's tool boundary:
recorded in production, served from the recording in an eval run. An MCP
tool answers with its content blocks; `structuredContent` holds the object.
"""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue

from wopeval.agents import AgentContext, ToolCallError

AUTO_REFUND_LIMIT = 100.0


async def decide(context: AgentContext) -> JsonValue:
    request: Any = context.input
    try:
        found: Any = await context.call_tool(
            "orders:lookup_order", {"order_id": request["order_id"]}
        )
    except ToolCallError as failure:
        return {"action": "escalate", "error": failure.code}
    order = found["structuredContent"]
    if order["status"] != "delivered":
        return {"action": "wait", "status": order["status"]}
    if order["total"] > AUTO_REFUND_LIMIT:
        return {"action": "escalate", "reason": "over the auto-refund limit"}
    refund: Any = await context.call_tool(
        "orders:refund", {"order_id": order["order_id"], "amount": order["total"]}
    )
    return {"action": "refund", "amount": refund["structuredContent"]["refunded"]}
