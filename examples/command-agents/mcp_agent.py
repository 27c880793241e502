"""An agent on the plain `mcp` client, in its own process (wopeval's command lane).

It knows nothing of wopeval but the MCP URL it is given (`WOPEVAL_MCP_URL`):
it lists its tools, looks the order up, refunds it when the rules allow,
and prints its decision as the last JSON line on stdout. The host lists the
orders server's tools by names any model API accepts: `orders:lookup_order`
is `orders__lookup_order` there (docs/agents.md, "Tool names").
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from mcp import Client

AUTO_REFUND_LIMIT = 100.0


async def decide(client: Client, order_id: str) -> dict[str, Any]:
    listed = {tool.name for tool in (await client.list_tools()).tools}
    if not {"orders__lookup_order", "orders__refund"} <= listed:
        return {"action": "escalate", "reason": "the order tools are not available"}
    found = await client.call_tool("orders__lookup_order", {"order_id": order_id})
    if found.is_error:
        return {"action": "escalate", "reason": "the order could not be looked up"}
    order = found.structured_content
    if order["status"] != "delivered":
        return {"action": "wait", "status": order["status"]}
    if order["total"] > AUTO_REFUND_LIMIT:
        return {"action": "escalate", "reason": "over the auto-refund limit"}
    refund = await client.call_tool(
        "orders__refund", {"order_id": order_id, "amount": order["total"]}
    )
    if refund.is_error:
        return {"action": "escalate", "reason": "the refund was refused"}
    return {"action": "refund", "amount": refund.structured_content["refunded"]}


async def main() -> None:
    invocation = json.loads(sys.stdin.read())
    async with Client(os.environ["WOPEVAL_MCP_URL"]) as client:
        decision = await decide(client, invocation["input"]["order_id"])
    print(json.dumps(decision))


if __name__ == "__main__":
    asyncio.run(main())
