"""A small MCP server of orders and refunds, built with the official `mcp` SDK.

Run it over stdio (what wopeval does for `command = [...]`) or over Streamable
HTTP (`--http PORT`, for `url = "http://127.0.0.1:PORT/mcp"`):

    python orders_server.py               # stdio
    python orders_server.py --http 8791   # http://127.0.0.1:8791/mcp

Every `tools/call` it receives is appended, one JSON line each, to the file
named by `ORDERS_CALL_LOG` (when set): that is how you see that a replay
served from recorded fixtures called it zero times. The log also says whether
the call carried the API token wopeval injects at egress (the environment
variable `ORDERS_API_TOKEN` over stdio, the `Authorization` header over HTTP);
the token itself never appears in a run's events or records.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import TypedDict

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError


class Order(TypedDict):
    order_id: str
    status: str
    total: float
    currency: str


class Refund(TypedDict):
    order_id: str
    refunded: float
    refund_id: str


ORDERS: dict[str, Order] = {
    "A-1001": {"order_id": "A-1001", "status": "delivered", "total": 40.0, "currency": "EUR"},
    "A-1002": {"order_id": "A-1002", "status": "shipped", "total": 80.0, "currency": "EUR"},
    "A-1003": {"order_id": "A-1003", "status": "delivered", "total": 250.0, "currency": "EUR"},
}

server = MCPServer("orders", instructions="Orders and refunds of a small web shop.")
_refunds: list[Refund] = []


def _received(tool: str, arguments: dict[str, object], context: Context) -> None:
    headers = context.headers or {}
    token = headers.get("authorization") or os.environ.get("ORDERS_API_TOKEN")
    log = os.environ.get("ORDERS_CALL_LOG")
    if log:
        entry = {"pid": os.getpid(), "tool": tool, "arguments": arguments, "token": bool(token)}
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")


@server.tool()
def lookup_order(order_id: str, context: Context) -> Order:
    """Look an order up by its id: its status, total and currency."""
    _received("lookup_order", {"order_id": order_id}, context)
    order = ORDERS.get(order_id)
    if order is None:
        raise ToolError(f"no order {order_id}")
    return order


@server.tool()
def refund(order_id: str, amount: float, context: Context) -> Refund:
    """Refund `amount` of an order; more than the order's total is refused."""
    _received("refund", {"order_id": order_id, "amount": amount}, context)
    order = ORDERS.get(order_id)
    if order is None:
        raise ToolError(f"no order {order_id}")
    if amount > order["total"]:
        raise ToolError(f"refund of {amount} exceeds the order total {order['total']}")
    made: Refund = {
        "order_id": order_id,
        "refunded": amount,
        "refund_id": f"R-{len(_refunds) + 1:04d}",
    }
    _refunds.append(made)
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on PORT")
    options = parser.parse_args()
    if options.http is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=options.http, stateless_http=True)


if __name__ == "__main__":
    main()
