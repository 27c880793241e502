"""A Responses answer as OpenAI streams it: typed events, each with its `sequence_number`.

`response.created` and `response.in_progress` carry the response still empty;
each output item is added, its text (three characters at a time) or its
arguments (five at a time) follow as deltas and a done event, then the item is
done; `response.completed` (or `response.incomplete`) carries the whole
response.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

TEXT_PIECE = 3
ARGUMENTS_PIECE = 5


def _pieces(text: str, size: int) -> list[str]:
    return [text[start : start + size] for start in range(0, len(text), size)]


def events(response: dict[str, Any]) -> Iterator[dict[str, Any]]:
    opening = {
        **response,
        "status": "in_progress",
        "output": [],
        "usage": None,
        "incomplete_details": None,
    }
    unnumbered: list[dict[str, Any]] = [
        {"type": "response.created", "response": opening},
        {"type": "response.in_progress", "response": opening},
    ]
    for index, item in enumerate(response["output"]):
        unnumbered.extend(_item_events(index, item))
    final = "response.incomplete" if response["status"] == "incomplete" else "response.completed"
    unnumbered.append({"type": final, "response": response})
    for number, event in enumerate(unnumbered):
        yield {**event, "sequence_number": number}


def _item_events(index: int, item: dict[str, Any]) -> Iterator[dict[str, Any]]:
    at = {"output_index": index, "item_id": item["id"]}
    if item["type"] == "function_call":
        yield {
            "type": "response.output_item.added",
            "output_index": index,
            "item": {**item, "status": "in_progress", "arguments": ""},
        }
        for piece in _pieces(item["arguments"], ARGUMENTS_PIECE):
            yield {"type": "response.function_call_arguments.delta", **at, "delta": piece}
        yield {
            "type": "response.function_call_arguments.done",
            **at,
            "name": item["name"],
            "arguments": item["arguments"],
        }
    else:
        yield {
            "type": "response.output_item.added",
            "output_index": index,
            "item": {**item, "status": "in_progress", "content": []},
        }
        for content_index, part in enumerate(item["content"]):
            yield from _part_events({**at, "content_index": content_index}, part)
    yield {"type": "response.output_item.done", "output_index": index, "item": item}


def _part_events(at: dict[str, Any], part: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if part["type"] == "refusal":
        yield {"type": "response.content_part.added", **at, "part": {**part, "refusal": ""}}
        for piece in _pieces(part["refusal"], TEXT_PIECE):
            yield {"type": "response.refusal.delta", **at, "delta": piece}
        yield {"type": "response.refusal.done", **at, "refusal": part["refusal"]}
    else:
        yield {"type": "response.content_part.added", **at, "part": {**part, "text": ""}}
        for piece in _pieces(part["text"], TEXT_PIECE):
            yield {"type": "response.output_text.delta", **at, "delta": piece, "logprobs": []}
        yield {"type": "response.output_text.done", **at, "text": part["text"], "logprobs": []}
    yield {"type": "response.content_part.done", **at, "part": part}
