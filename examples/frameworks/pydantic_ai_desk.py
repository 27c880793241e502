"""The refund desk on PydanticAI, as its quick-start writes it.

`openai:` models run on OpenAI's Responses API; the OpenAI provider reads
`OPENAI_BASE_URL` and `OPENAI_API_KEY`, which wopeval sets to the invocation's
recording model proxy and its token. The tools come from the MCP endpoint
wopeval hands over as `WOPEVAL_MCP_URL`.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset

PROMPT = (Path(__file__).parent / "prompt.md").read_text(encoding="utf-8")

agent = Agent(
    "openai:gpt-4.1-mini",
    instructions=PROMPT,
    toolsets=[MCPToolset(os.environ["WOPEVAL_MCP_URL"])],
)


async def main() -> None:
    order = json.dumps(json.loads(sys.stdin.read())["input"])
    async with agent:
        result = await agent.run(order)
    print(result.output)


if __name__ == "__main__":
    asyncio.run(main())
