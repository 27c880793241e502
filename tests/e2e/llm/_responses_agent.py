"""A command-lane agent on the official `openai` SDK's Responses API: it knows nothing of wopeval.

The client reads `OPENAI_BASE_URL` and `OPENAI_API_KEY` from its environment,
which the host set to the invocation's recording model proxy and its token.
It asks the model (streamed or whole, as its input says) with an `add`
function, runs each call itself and sends its `function_call_output` back —
carrying the conversation along, or (`chain`) naming the previous response by
`previous_response_id` — and prints the model's final text. With `envFile` in
its input it writes the model variables it was handed there first.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from openai import OpenAI, omit
from openai.types.responses import FunctionToolParam, Response, ResponseInputItemParam

MODEL = "gpt-test-mini"
ADD: FunctionToolParam = {
    "type": "function",
    "name": "add",
    "description": "Add two numbers.",
    "parameters": {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    },
    "strict": True,
}
VARIABLES = ("OPENAI_BASE_URL", "OPENAI_API_BASE", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL",
             "ANTHROPIC_API_KEY")  # fmt: skip


def ask(
    client: OpenAI, request: dict[str, Any], items: list[ResponseInputItemParam], previous: str
) -> Response:
    chained = previous or omit
    instructions = request.get("instructions") or omit
    if not request["stream"]:
        return client.responses.create(
            model=MODEL,
            input=items,
            tools=[ADD],
            previous_response_id=chained,
            instructions=instructions,
        )
    with client.responses.stream(
        model=MODEL,
        input=items,
        tools=[ADD],
        previous_response_id=chained,
        instructions=instructions,
    ) as events:
        for _ in events:
            pass
        return events.get_final_response()


def main() -> None:
    request = json.loads(sys.stdin.read())["input"]
    if "envFile" in request:
        handed = {name: os.environ.get(name) for name in VARIABLES}
        Path(request["envFile"]).write_text(json.dumps(handed))
    client = OpenAI(max_retries=0)
    conversation: list[ResponseInputItemParam] = [{"role": "user", "content": request["question"]}]
    items, previous = conversation, ""
    for _ in range(4):
        response = ask(client, request, items, previous)
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            print(json.dumps({"answer": response.output_text}))
            return
        outputs: list[ResponseInputItemParam] = []
        for call in calls:
            args = json.loads(call.arguments)
            result = json.dumps({"sum": args["a"] + args["b"]})
            outputs.append(
                {"type": "function_call_output", "call_id": call.call_id, "output": result}
            )
        if request.get("chain"):
            items, previous = outputs, response.id
        else:
            said: list[Any] = [item.model_dump(exclude_none=True) for item in response.output]
            conversation = [*conversation, *said, *outputs]
            items = conversation
    print(json.dumps({"answer": None}))


if __name__ == "__main__":
    main()
