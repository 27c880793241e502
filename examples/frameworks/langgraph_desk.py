"""The refund desk as a LangGraph agent with langchain-mcp-adapters, as their quick-start
writes it.

`create_agent` builds LangGraph's tool-calling graph around `ChatOpenAI`, which
reads `OPENAI_BASE_URL` and `OPENAI_API_KEY`: wopeval sets them to the
invocation's recording model proxy and its token (Chat Completions). The tools
come from the MCP endpoint wopeval hands over as `WOPEVAL_MCP_URL`.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from langchain.agents import create_agent
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_openai import ChatOpenAI

PROMPT = (Path(__file__).parent / "prompt.md").read_text(encoding="utf-8")


async def main() -> None:
    order = json.dumps(json.loads(sys.stdin.read())["input"])
    client = MultiServerMCPClient(
        {"orders": {"transport": "streamable_http", "url": os.environ["WOPEVAL_MCP_URL"]}}
    )
    tools = await client.get_tools()
    agent = create_agent(ChatOpenAI(model="gpt-4.1-mini"), tools, system_prompt=PROMPT)
    state = await agent.ainvoke({"messages": [{"role": "user", "content": order}]})
    print(state["messages"][-1].content)


if __name__ == "__main__":
    asyncio.run(main())
