"""The refund desk on Google's Agent Development Kit with a LiteLLM model, as ADK's
LiteLLM and MCP quick-starts write it.

`LiteLlm(model="openai/…")` sends OpenAI Chat Completions through LiteLLM,
which reads `OPENAI_BASE_URL` and `OPENAI_API_KEY`: wopeval sets them to the
invocation's recording model proxy and its token. The tools come from the MCP
endpoint wopeval hands over as `WOPEVAL_MCP_URL`.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from google.adk.agents import LlmAgent
from google.adk.models.lite_llm import LiteLlm
from google.adk.runners import InMemoryRunner
from google.adk.tools.mcp_tool import McpToolset, StreamableHTTPConnectionParams
from google.genai import types

PROMPT = (Path(__file__).parent / "prompt.md").read_text(encoding="utf-8")


async def main() -> None:
    order = json.dumps(json.loads(sys.stdin.read())["input"])
    orders = McpToolset(
        connection_params=StreamableHTTPConnectionParams(url=os.environ["WOPEVAL_MCP_URL"])
    )
    agent = LlmAgent(
        name="refund_desk",
        model=LiteLlm(model="openai/gpt-4.1-mini"),
        instruction=PROMPT,
        tools=[orders],
    )
    runner = InMemoryRunner(agent=agent, app_name="refund_desk")
    session = await runner.session_service.create_session(app_name="refund_desk", user_id="desk")
    message = types.Content(role="user", parts=[types.Part(text=order)])
    answer = ""
    async for event in runner.run_async(user_id="desk", session_id=session.id, new_message=message):
        if event.is_final_response() and event.content and event.content.parts:
            answer = "".join(part.text or "" for part in event.content.parts)
    await runner.close()
    print(answer)


if __name__ == "__main__":
    asyncio.run(main())
