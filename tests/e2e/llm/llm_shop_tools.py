"""The python tools of the LLM tests' project: an order desk."""

from __future__ import annotations

from typing_extensions import TypedDict


class OrderRef(TypedDict):
    order: str


class RefundRequest(TypedDict):
    order: str
    amount: float


async def lookup(args: OrderRef) -> dict[str, object]:
    """Look an order up: its total and status."""
    total = 500.0 if args["order"].endswith("9") else 42.0
    return {"order": args["order"], "total": total, "status": "delivered"}


async def refund(args: RefundRequest) -> dict[str, object]:
    """Refund an order."""
    return {"order": args["order"], "refunded": args["amount"]}
