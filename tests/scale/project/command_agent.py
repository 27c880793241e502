"""The scale tier's agent in its own process (the command lane).

Input `{"args": {...}, "question": "..."}`: it calls `scale:lookup` with `args`
over MCP (where it is offered as `scale__lookup`), asks its model `question`
through the OpenAI SDK (whose base URL and key the host sets), and answers
`{"tool": <the tool's answer>, "model": <the reply>}`.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from mcp import Client
from openai import OpenAI


async def main() -> None:
    given = json.loads(sys.stdin.read())["input"]
    async with Client(os.environ["WOPEVAL_MCP_URL"]) as client:
        found = await client.call_tool("scale__lookup", given["args"])
    reply = OpenAI().chat.completions.create(
        model="scale-model", messages=[{"role": "user", "content": given["question"]}]
    )
    print(json.dumps({"tool": found.structured_content, "model": reply.choices[0].message.content}))


if __name__ == "__main__":
    asyncio.run(main())
