"""A command-lane agent on the official `anthropic` SDK: it knows nothing of wopeval.

The client reads `ANTHROPIC_BASE_URL` and `ANTHROPIC_API_KEY` from its
environment, which the host set to the invocation's recording model proxy and
its token. It asks the model (streamed or whole, as its input says) with an
`add` tool, answers each `tool_use` block with a `tool_result` block, and
prints the model's final text. With `raw` in its input it skips the SDK and
posts each request itself with the token as `x-api-key` (as older Anthropic
clients and plain HTTP do).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import httpx
from anthropic import Anthropic
from anthropic.types import Message, MessageParam, ToolParam

MODEL = "claude-test"
ADD: ToolParam = {
    "name": "add",
    "description": "Add two numbers.",
    "input_schema": {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    },
}


def ask(client: Anthropic, request: dict[str, Any], messages: list[MessageParam]) -> Message:
    if request.get("raw"):
        answer = httpx.post(
            os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages",
            headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"],
                     "anthropic-version": "2023-06-01"},
            json={"model": MODEL, "max_tokens": 256, "messages": messages, "tools": [ADD]},
            timeout=30,
        )  # fmt: skip
        answer.raise_for_status()
        return Message.model_validate(answer.json())
    if not request["stream"]:
        return client.messages.create(model=MODEL, max_tokens=256, messages=messages, tools=[ADD])
    with client.messages.stream(
        model=MODEL, max_tokens=256, messages=messages, tools=[ADD]
    ) as events:
        for _ in events:
            pass
        return events.get_final_message()


def main() -> None:
    request = json.loads(sys.stdin.read())["input"]
    client = Anthropic(max_retries=0)
    messages: list[MessageParam] = [{"role": "user", "content": request["question"]}]
    for _ in range(4):
        message = ask(client, request, messages)
        uses = [block for block in message.content if block.type == "tool_use"]
        if not uses:
            text = "".join(block.text for block in message.content if block.type == "text")
            print(json.dumps({"answer": text}))
            return
        said: list[Any] = [block.model_dump(exclude_none=True) for block in message.content]
        messages.append({"role": "assistant", "content": said})
        results: list[Any] = []
        for use in uses:
            args: Any = use.input
            result = json.dumps({"sum": args["a"] + args["b"]})
            results.append({"type": "tool_result", "tool_use_id": use.id, "content": result})
        messages.append({"role": "user", "content": results})
    print(json.dumps({"answer": None}))


if __name__ == "__main__":
    main()
