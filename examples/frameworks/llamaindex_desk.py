"""The refund desk on LlamaIndex, as its MCP quick-start writes it.

LlamaIndex's `OpenAI` LLM reads `OPENAI_API_BASE` and `OPENAI_API_KEY`, which
wopeval sets to the invocation's recording model proxy and its token (Chat
Completions). The tools come from the MCP endpoint wopeval hands over as
`WOPEVAL_MCP_URL`, through `McpToolSpec`.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.llms.openai import OpenAI
from llama_index.tools.mcp import BasicMCPClient, McpToolSpec

PROMPT = (Path(__file__).parent / "prompt.md").read_text(encoding="utf-8")


async def main() -> None:
    order = json.dumps(json.loads(sys.stdin.read())["input"])
    tools = await McpToolSpec(
        client=BasicMCPClient(os.environ["WOPEVAL_MCP_URL"])
    ).to_tool_list_async()
    agent = FunctionAgent(tools=tools, llm=OpenAI(model="gpt-4.1-mini"), system_prompt=PROMPT)
    response = await agent.run(order)
    print(str(response))


if __name__ == "__main__":
    asyncio.run(main())
