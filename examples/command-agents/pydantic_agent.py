"""A PydanticAI agent in its own process (wopeval's command lane), unchanged for wopeval.

Its only tie to wopeval is where its MCP toolset points: `WOPEVAL_MCP_URL`.
Every tool it calls (`orders__lookup_order`, `orders__refund`: the names the
host lists `orders:lookup_order` and `orders:refund` by) goes through
the host's boundary: recorded in production, served from that recording in
an eval run, and fail-closed on anything new.

The "model" is PydanticAI's own `FunctionModel`, a deterministic policy in
plain Python (no network, no LLM), so the example runs anywhere; swap it for
`"openai:gpt-5"` or any other model and nothing else changes.

Contract: the invocation arrives as JSON on stdin, the decision leaves as the
last JSON line on stdout.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

AUTO_REFUND_LIMIT = 100.0


def policy(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The refund desk's rules, as a model that decides one step at a time."""
    order_id = json.loads(_prompt(messages))["order_id"]
    returned = [
        part
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]
    if not returned:
        return _call("orders__lookup_order", {"order_id": order_id})
    last = returned[-1]
    answer = _content(last.content)
    if last.tool_name == "orders__refund":
        return _decide({"action": "refund", "amount": answer["refunded"]})
    if answer["status"] != "delivered":
        return _decide({"action": "wait", "status": answer["status"]})
    if answer["total"] > AUTO_REFUND_LIMIT:
        return _decide({"action": "escalate", "reason": "over the auto-refund limit"})
    return _call("orders__refund", {"order_id": order_id, "amount": answer["total"]})


def _prompt(messages: list[ModelMessage]) -> str:
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part.content
    raise ValueError("the run has no user prompt")


def _content(content: Any) -> Any:
    return json.loads(content) if isinstance(content, str) else content


def _call(tool: str, args: dict[str, Any]) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(tool, args)])


def _decide(decision: dict[str, Any]) -> ModelResponse:
    return ModelResponse(parts=[TextPart(json.dumps(decision))])


async def main() -> None:
    invocation = json.loads(sys.stdin.read())
    toolset = MCPToolset(os.environ["WOPEVAL_MCP_URL"])
    agent = Agent(FunctionModel(policy), toolsets=[toolset])
    async with agent:
        result = await agent.run(json.dumps(invocation["input"]))
    print(json.dumps(json.loads(result.output)))


if __name__ == "__main__":
    asyncio.run(main())
