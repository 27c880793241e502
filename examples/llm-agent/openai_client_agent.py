"""The refund desk as its own program: the plain `openai` client and the plain `mcp` client.

It knows nothing of wopeval. `OpenAI()` reads `OPENAI_BASE_URL` and
`OPENAI_API_KEY`, which the host set to the invocation's recording model
proxy and its token; `Client(WOPEVAL_MCP_URL)` lists and calls the tools,
whose names (`orders__refund`) any model API accepts as they are. It runs the
same tool loop as the openai lane (the same prompt, the input as the user
message, the tools as functions) and prints the model's final JSON.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from mcp import Client
from openai import AsyncOpenAI

MODEL = "gpt-4.1-mini"
PROMPT = (Path(__file__).parent / "prompts" / "desk.md").read_text(encoding="utf-8")
MAX_TURNS = 6


async def decide(model: AsyncOpenAI, tools: Client, order: dict[str, Any]) -> Any:
    listed = (await tools.list_tools()).tools
    functions: Any = [
        {"type": "function", "function": {"name": tool.name,
         "description": tool.description or "", "parameters": tool.input_schema}}
        for tool in sorted(listed, key=lambda t: t.name)
    ]  # fmt: skip
    messages: list[Any] = [
        {"role": "system", "content": PROMPT},
        {"role": "user", "content": json.dumps(order, sort_keys=True, separators=(",", ":"))},
    ]
    for _ in range(MAX_TURNS):
        completion = await model.chat.completions.create(
            model=MODEL,
            messages=messages,
            tools=functions,
            temperature=0,
            response_format={"type": "json_object"},
        )
        message = completion.choices[0].message
        if not message.tool_calls:
            return json.loads(message.content or "null")
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            if call.type != "function":
                continue
            result = await tools.call_tool(call.function.name, json.loads(call.function.arguments))
            content = [block.model_dump(exclude_none=True) for block in result.content]
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": json.dumps(content)}
            )
    return {"action": "escalate", "reason": "no answer"}


async def main() -> None:
    invocation = json.loads(sys.stdin.read())
    async with Client(os.environ["WOPEVAL_MCP_URL"]) as tools:
        decision = await decide(AsyncOpenAI(), tools, invocation["input"])
    print(json.dumps(decision))


if __name__ == "__main__":
    asyncio.run(main())
