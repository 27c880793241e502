"""A command-lane agent that carries a marker down every content path, for the erasure scan.

It reads the marker from the file its input names (never from its input: a run's inputs
are the caller's, not tool content, and stay), says it on stderr, passes it to a python,
an HTTP and an MCP tool through its MCP endpoint — to each once where it answers and once
where it fails — and asks the model through its proxy, whose scripted answer says it back.
Each path adds its own suffix, so a scan names the path that leaked. It decides `done`.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from mcp import Client
from openai import OpenAI
from openai.types.chat import ChatCompletionUserMessageParam

MODEL = "gpt-test-mini"
CALLS = (
    ("marker__echo", "text", "python-args"),
    ("marker__refuse", "reason", "python-error"),
    ("marker__crm", "customer", "http-args"),
    ("marker__fails", "customer", "http-failing-args"),
    ("count__lookup", "key", "mcp-args"),
    ("count__refuse", "reason", "mcp-error"),
)


async def call_tools(marker: str) -> None:
    async with Client(os.environ["WOPEVAL_MCP_URL"]) as client:
        for tool, field, path in CALLS:
            await client.call_tool(tool, {field: f"{marker}-{path}"})


def main() -> None:
    invocation = json.loads(sys.stdin.read())
    marker = Path(invocation["input"]["markerFile"]).read_text()
    print(f"{marker}-stderr", file=sys.stderr)
    asyncio.run(call_tools(marker))
    question: ChatCompletionUserMessageParam = {
        "role": "user",
        "content": f"{marker}-model-request",
    }
    OpenAI(max_retries=0).chat.completions.create(model=MODEL, messages=[question])
    print(json.dumps({"answer": "done"}))


if __name__ == "__main__":
    main()
