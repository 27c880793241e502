"""`support:kb`: the knowledge base, a python tool. The CRM is an HTTP tool (see crm.py)."""

from __future__ import annotations

from typing import Any

from wopeval.tools import ToolFailure

ARTICLES: dict[str, dict[str, str]] = {
    "billing": {
        "action": "refund",
        "queue": "billing",
        "reply": "We have refunded the duplicate charge; it reaches your card in 3-5 days.",
    },
    "account": {
        "action": "self-service",
        "queue": "none",
        "reply": "Use 'Forgot password' on the sign-in page; the link is valid for one hour.",
    },
    "outage": {
        "action": "escalate",
        "queue": "engineering",
        "reply": "Engineering is looking into the errors; we will update you within the hour.",
    },
    "plan": {
        "action": "answer",
        "queue": "sales",
        "reply": "You can switch to annual billing under Settings > Plan; it saves two months.",
    },
    "privacy": {
        "action": "escalate",
        "queue": "privacy",
        "reply": "Our privacy team will confirm the deletion of your account within 30 days.",
    },
}


async def kb_lookup(args: Any) -> dict[str, str]:
    """`{"topic": T}` → the article for T; an unknown topic is a tool error the agent sees."""
    topic = args.get("topic") if isinstance(args, dict) else None
    article = ARTICLES.get(str(topic))
    if article is None:
        raise ToolFailure("no_article", "The knowledge base has no article on that topic.")
    return {"topic": str(topic), **article}
