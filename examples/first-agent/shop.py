"""The shop's order lookup, a python tool (`shop:order`).

In an eval run the suite's fixtures answer in its place, as recordings of it
would: the tool itself runs only when a call is let through live.
"""

from __future__ import annotations

from typing import Any

ORDERS = {
    "A-1001": {"order_id": "A-1001", "status": "delivered", "total": 40},
    "A-1002": {"order_id": "A-1002", "status": "delivered", "total": 250},
    "A-1003": {"order_id": "A-1003", "status": "shipped", "total": 75},
}


async def order(args: Any) -> dict[str, Any]:
    order_id = args.get("order_id") if isinstance(args, dict) else None
    return ORDERS.get(str(order_id), {"order_id": order_id, "status": "unknown", "total": 0})
