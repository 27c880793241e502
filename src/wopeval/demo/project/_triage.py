"""What both agent versions share: reading the message and calling the two tools."""

from __future__ import annotations

from typing import Any

from wopeval.agents import AgentContext

KEYWORDS = (
    ("charged", "billing"),
    ("refund", "billing"),
    ("password", "account"),
    ("error", "outage"),
    ("plan", "plan"),
    ("delete", "privacy"),
)


def topic_of(message: str) -> str:
    """A keyword classifier: the demo's stand-in for a model call."""
    text = message.lower()
    return next((topic for word, topic in KEYWORDS if word in text), "account")


async def look_up(context: AgentContext) -> tuple[dict[str, Any], dict[str, Any]]:
    """The knowledge-base article for the message and the customer's CRM record."""
    case = context.input if isinstance(context.input, dict) else {}
    article = await context.call_tool("support:kb", {"topic": topic_of(str(case.get("message")))})
    customer = await context.call_tool("support:crm", {"customerId": case.get("customerId")})
    if not isinstance(article, dict) or not isinstance(customer, dict):
        raise TypeError("a tool answered something other than an object")
    return article, customer


def decision(article: dict[str, Any], customer: dict[str, Any], priority: str) -> dict[str, Any]:
    first_name = str(customer.get("name", "there")).split()[0]
    return {
        "action": article["action"],
        "queue": article["queue"],
        "priority": priority,
        "reply": f"Hi {first_name}. {article['reply']}",
    }
