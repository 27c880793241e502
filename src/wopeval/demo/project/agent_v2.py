"""support-agent v2: "simpler routing" — high priority for enterprise customers only.

The change looks harmless and the suite's aggregate bar still passes, but a pro
customer with four open tickets is now routed at normal priority: the paired
verdict catches that one task.
"""

from __future__ import annotations

from pydantic import JsonValue

from wopeval.agents import AgentContext, ToolCallError
from wopeval.demo.project._triage import decision, look_up


async def decide(context: AgentContext) -> JsonValue:
    try:
        article, customer = await look_up(context)
    except ToolCallError as failure:
        return {"action": "escalate", "queue": "support", "error": failure.code}
    priority = "high" if customer.get("plan") == "enterprise" else "normal"
    return decision(article, customer, priority)
