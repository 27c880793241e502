"""The refund desk on smolagents, as its MCP quick-start writes it.

`OpenAIModel` builds the `openai` client, which reads `OPENAI_BASE_URL` and
`OPENAI_API_KEY`: wopeval sets them to the invocation's recording model proxy
and its token (Chat Completions). The tools come from the MCP endpoint wopeval
hands over as `WOPEVAL_MCP_URL`. A `ToolCallingAgent` answers through its
`final_answer` tool; its run log goes to stdout, before the decision.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from smolagents import MCPClient, OpenAIModel, ToolCallingAgent

PROMPT = (Path(__file__).parent / "prompt.md").read_text(encoding="utf-8")


def main() -> None:
    order = json.dumps(json.loads(sys.stdin.read())["input"])
    server = {"url": os.environ["WOPEVAL_MCP_URL"], "transport": "streamable-http"}
    with MCPClient(server, structured_output=True) as tools:
        agent = ToolCallingAgent(
            tools=tools, model=OpenAIModel(model_id="gpt-4.1-mini"), instructions=PROMPT
        )
        answer = agent.run(order)
    print(json.dumps(answer) if not isinstance(answer, str) else answer)


if __name__ == "__main__":
    main()
