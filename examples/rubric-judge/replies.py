"""A support agent that answers in prose: the text a rubric judge grades.

Its refund answer cites the policy; its shipping answer forgets to apologise,
which the suite's rubric catches (`late-parcel`).
"""

from __future__ import annotations

from pydantic import JsonValue

from wopeval.agents import AgentContext

ANSWERS = {
    "refund": "You can return the item within 30 days of delivery for a full refund. "
    "Reply with your order number and we will send a prepaid label.",
    "late": "Your parcel left our warehouse on Monday and should arrive within two days.",
}


async def reply(context: AgentContext) -> JsonValue:
    question = context.input
    topic = question.get("topic") if isinstance(question, dict) else None
    return ANSWERS.get(str(topic), "Let me pass this to a colleague.")
