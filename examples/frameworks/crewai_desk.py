"""The refund desk as a one-agent CrewAI crew, as CrewAI's MCP quick-start writes it.

CrewAI's OpenAI LLM reads `OPENAI_BASE_URL` and `OPENAI_API_KEY`, which
wopeval sets to the invocation's recording model proxy and its token (Chat
Completions). The tools come from the MCP endpoint wopeval hands over as
`WOPEVAL_MCP_URL`, through `MCPServerAdapter`: it offers each tool under its
MCP name (the agent's `mcps=[url]` shortcut would prefix every name with the
URL's host, port and path, which differ at each invocation).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from crewai import Agent, Crew, Task
from crewai_tools import MCPServerAdapter

PROMPT = (Path(__file__).parent / "prompt.md").read_text(encoding="utf-8")


def main() -> None:
    order = json.dumps(json.loads(sys.stdin.read())["input"])
    server = {"url": os.environ["WOPEVAL_MCP_URL"], "transport": "streamable-http"}
    with MCPServerAdapter(server) as tools:
        desk = Agent(
            role="Refund desk",
            goal="Settle each refund request by the shop's rules.",
            backstory=PROMPT,
            tools=tools,
            llm="gpt-4.1-mini",
        )
        request = Task(
            description="The refund request: {order}",
            expected_output="The JSON object of the decision, on one line.",
            agent=desk,
        )
        result = Crew(agents=[desk], tasks=[request]).kickoff(inputs={"order": order})
    print(result.raw)


if __name__ == "__main__":
    main()
