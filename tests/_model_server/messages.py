"""Anthropic Messages (`POST /v1/messages`): whole answers and streamed events.

The N-th answer of a conversation is its script's N-th turn, N being the number
of assistant turns it holds (consecutive assistant messages are one turn, as
Anthropic combines them). A turn's text becomes a `text` block, its tool calls
`tool_use` blocks; `stop_reason` is `end_turn`, `tool_use`, `max_tokens` (a
turn whose finish reason is `length`) or `refusal`. A stream sends
`message_start`, each block's start, deltas (`text_delta` three characters at
a time, `input_json_delta` five) and stop, then `message_delta` and
`message_stop`, each under its `event:` line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from . import messages_checks
from .chat import REPORTED_SUFFIX
from .errors import Refusal, anthropic_body
from .script import Reply, Transcript, text_of

PATH = "/v1/messages"
TEXT_PIECE = 3
ARGUMENTS_PIECE = 5
STOP_REASONS = {"length": "max_tokens", "tool_calls": "tool_use"}


class Messages:
    path = PATH

    def credential(self, headers: dict[str, str]) -> Refusal | None:
        return messages_checks.credential(headers)

    def refusal(self, body: dict[str, Any]) -> Refusal | None:
        return messages_checks.refusal(body)

    def first_user(self, body: dict[str, Any]) -> str | None:
        messages = body.get("messages")
        users = [m for m in messages or [] if isinstance(m, dict) and m.get("role") == "user"]
        return text_of(users[0].get("content")) if users else None

    def transcript(self, body: dict[str, Any]) -> Transcript:
        combined = messages_checks.turns(body["messages"])
        tools = [t["name"] for t in body.get("tools") or [] if t.get("type", "custom") == "custom"]
        return Transcript(
            first_user=self.first_user(body),
            system=text_of(body.get("system")) or "",
            turns_taken=sum(1 for turn in combined if turn.role == "assistant"),
            offered=frozenset(tools),
        )

    def error_body(self, refusal: Refusal) -> dict[str, Any]:
        return anthropic_body(refusal)

    def whole(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        return message(body, reply)

    def stream(self, body: dict[str, Any], reply: Reply) -> Iterator[bytes]:
        for event in events(message(body, reply)):
            yield f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def content_blocks(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    text = reply.refusal if reply.refusal is not None else reply.text
    if text is not None:
        blocks.append({"type": "text", "text": text})
    blocks.extend(
        {
            "type": "tool_use",
            "id": f"toolu_{reply.turn_index}_{index}",
            "name": call.name,
            "input": json.loads(call.arguments),
        }
        for index, call in enumerate(reply.calls)
    )
    return blocks


def message(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    blocks = content_blocks(reply)
    stop = "refusal" if reply.refusal is not None else STOP_REASONS.get(reply.finish, "end_turn")
    # Deterministic token counts: a quarter of the characters, at least one.
    read = max(1, len(json.dumps([body.get("system"), body["messages"]])) // 4)
    written = max(1, len(json.dumps(blocks)) // 4)
    return {
        "id": f"msg_scripted_{reply.turn_index}",
        "type": "message",
        "role": "assistant",
        "model": f"{body['model']}{REPORTED_SUFFIX}",
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": read, "output_tokens": written},
    }


def _pieces(text: str, size: int) -> list[str]:
    return [text[start : start + size] for start in range(0, len(text), size)]


def events(whole: dict[str, Any]) -> Iterator[dict[str, Any]]:
    usage = whole["usage"]
    opening = {
        **whole,
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": usage["input_tokens"], "output_tokens": 1},
    }
    yield {"type": "message_start", "message": opening}
    for index, block in enumerate(whole["content"]):
        if block["type"] == "text":
            yield {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            }
            for piece in _pieces(block["text"], TEXT_PIECE):
                yield {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": piece},
                }
        else:
            yield {
                "type": "content_block_start",
                "index": index,
                "content_block": {**block, "input": {}},
            }
            for piece in _pieces(json.dumps(block["input"]), ARGUMENTS_PIECE):
                yield {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                }
        yield {"type": "content_block_stop", "index": index}
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
        "usage": {"output_tokens": usage["output_tokens"]},
    }
    yield {"type": "message_stop"}
