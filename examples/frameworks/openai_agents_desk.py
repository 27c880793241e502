"""The refund desk on the OpenAI Agents SDK, as its quick-start writes it.

The SDK's default model API is OpenAI's Responses API; its client reads
`OPENAI_BASE_URL` and `OPENAI_API_KEY`, which wopeval sets to the invocation's
recording model proxy and its token. The tools come from the MCP endpoint
wopeval hands over as `WOPEVAL_MCP_URL`. `--stream` runs the same agent
streamed (`Runner.run_streamed`).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from agents import Agent, Runner
from agents.mcp import MCPServerStreamableHttp

PROMPT = (Path(__file__).parent / "prompt.md").read_text(encoding="utf-8")


async def main(streamed: bool) -> None:
    order = json.dumps(json.loads(sys.stdin.read())["input"])
    async with MCPServerStreamableHttp(
        name="orders", params={"url": os.environ["WOPEVAL_MCP_URL"]}
    ) as orders:
        agent = Agent(
            name="Refund desk", instructions=PROMPT, model="gpt-4.1-mini", mcp_servers=[orders]
        )
        if streamed:
            result = Runner.run_streamed(agent, order)
            async for _event in result.stream_events():
                pass
            answer = result.final_output
        else:
            answer = (await Runner.run(agent, order)).final_output
    print(answer)


if __name__ == "__main__":
    asyncio.run(main(streamed="--stream" in sys.argv[1:]))
