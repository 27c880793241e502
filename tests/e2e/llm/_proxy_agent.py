"""A command-lane agent on the plain `openai` client: it knows nothing of wopeval.

The client reads `OPENAI_BASE_URL` and `OPENAI_API_KEY` from its environment,
which the host set to the invocation's recording model proxy and its token.
It asks the model (streamed or whole, as its input says), runs the `add`
function the model calls itself, and prints the model's final answer (with
`showUsage` in its input, and the token counts the answer reported). With
`urlFile` in its input it writes its proxy URL and token there first (never
into its decision: the token is a capability).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from openai import OpenAI
from openai.types.chat import ChatCompletionFunctionToolParam

MODEL = "gpt-test-mini"
ADD: ChatCompletionFunctionToolParam = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two numbers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    },
}


def ask(client: OpenAI, messages: list[Any], stream: bool) -> Any:
    if not stream:
        return client.chat.completions.create(model=MODEL, messages=messages, tools=[ADD])
    with client.chat.completions.stream(
        model=MODEL, messages=messages, tools=[ADD], stream_options={"include_usage": True}
    ) as events:
        for _ in events:
            pass
        return events.get_final_completion()


def main() -> None:
    invocation = json.loads(sys.stdin.read())
    request = invocation["input"]
    if "urlFile" in request:
        seen = {"url": os.environ["OPENAI_BASE_URL"], "key": os.environ["OPENAI_API_KEY"]}
        Path(request["urlFile"]).write_text(json.dumps(seen))
    client = OpenAI(max_retries=0)
    messages: list[Any] = [{"role": "user", "content": request["question"]}]
    for _ in range(4):
        completion = ask(client, messages, request["stream"])
        message = completion.choices[0].message
        if not message.tool_calls:
            decision: dict[str, Any] = {"answer": message.content}
            if request.get("showUsage") and completion.usage is not None:
                decision["usage"] = completion.usage.model_dump(exclude_none=True)
            print(json.dumps(decision))
            return
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            args = json.loads(call.function.arguments)
            result = {"sum": args["a"] + args["b"]}
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}
            )
    print(json.dumps({"answer": None}))


if __name__ == "__main__":
    main()
