"""The refund desk as a plain tool loop on the Anthropic SDK and the `mcp` client.

`AsyncAnthropic()` reads `ANTHROPIC_BASE_URL` and `ANTHROPIC_API_KEY`, which
wopeval sets to the invocation's recording proxy of the Messages API and its
token. The tools are listed from, and called at, the MCP endpoint wopeval hands
over as `WOPEVAL_MCP_URL`. The loop is the one of Anthropic's tool-use guide:
send, run each `tool_use` block, answer with `tool_result` blocks, until the
model stops asking for tools.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from anthropic import AsyncAnthropic
from mcp import Client

PROMPT = (Path(__file__).parent / "prompt.md").read_text(encoding="utf-8")
MODEL = "claude-sonnet-4-5"


async def main() -> None:
    order = json.dumps(json.loads(sys.stdin.read())["input"])
    claude = AsyncAnthropic()
    async with Client(os.environ["WOPEVAL_MCP_URL"]) as orders:
        tools: Any = [
            {"name": tool.name, "description": tool.description or "",
             "input_schema": tool.input_schema}
            for tool in (await orders.list_tools()).tools
        ]  # fmt: skip
        messages: list[Any] = [{"role": "user", "content": order}]
        while True:
            response = await claude.messages.create(
                model=MODEL, max_tokens=1024, system=PROMPT, tools=tools, messages=messages
            )
            if response.stop_reason != "tool_use":
                break
            messages.append({"role": "assistant", "content": response.content})
            results = []
            for block in response.content:
                if block.type == "tool_use":
                    result = await orders.call_tool(block.name, block.input)
                    text = "".join(part.text for part in result.content if part.type == "text")
                    results.append({"type": "tool_result", "tool_use_id": block.id,
                                    "content": text, "is_error": result.is_error})  # fmt: skip
            messages.append({"role": "user", "content": results})
    print("".join(block.text for block in response.content if block.type == "text"))


if __name__ == "__main__":
    asyncio.run(main())
