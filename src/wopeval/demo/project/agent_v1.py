"""support-agent v1: high priority for enterprise customers and for anyone with 3+ open tickets."""

from __future__ import annotations

from pydantic import JsonValue

from wopeval.agents import AgentContext, ToolCallError
from wopeval.demo.project._triage import decision, look_up


async def decide(context: AgentContext) -> JsonValue:
    try:
        article, customer = await look_up(context)
    except ToolCallError as failure:
        return {"action": "escalate", "queue": "support", "error": failure.code}
    busy = int(customer.get("openTickets", 0)) >= 3
    priority = "high" if customer.get("plan") == "enterprise" or busy else "normal"
    return decision(article, customer, priority)
