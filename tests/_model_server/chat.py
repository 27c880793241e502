"""OpenAI Chat Completions (`POST /v1/chat/completions`): whole answers and SSE deltas.

The N-th answer of a conversation is its script's N-th turn, N being the number
of assistant messages the request carries. A stream sends content three
characters at a time and each tool call's arguments in pieces, then the finish
reason and, when `stream_options.include_usage` asks, the usage.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from . import chat_checks
from .checks import openai_credential
from .errors import Refusal, openai_body
from .script import Reply, Transcript, text_of

PATH = "/v1/chat/completions"
REPORTED_SUFFIX = "-0001"
"""The model id an answer reports is the requested one plus this (like a dated snapshot)."""
SYSTEM_ROLES = ("system", "developer")


def call_id(reply: Reply, index: int) -> str:
    return f"call_{reply.turn_index}_{index}"


class ChatCompletions:
    path = PATH

    def credential(self, headers: dict[str, str]) -> Refusal | None:
        return openai_credential(headers)

    def refusal(self, body: dict[str, Any]) -> Refusal | None:
        return chat_checks.refusal(body)

    def first_user(self, body: dict[str, Any]) -> str | None:
        messages = body.get("messages")
        users = [m for m in messages or [] if isinstance(m, dict) and m.get("role") == "user"]
        return text_of(users[0].get("content")) if users else None

    def transcript(self, body: dict[str, Any]) -> Transcript:
        messages: list[dict[str, Any]] = body["messages"]
        system = [text_of(m.get("content")) or "" for m in messages if m["role"] in SYSTEM_ROLES]
        tools = [t["function"]["name"] for t in body.get("tools") or [] if "function" in t]
        return Transcript(
            first_user=self.first_user(body),
            system="\n".join(system),
            turns_taken=sum(1 for m in messages if m["role"] == "assistant"),
            offered=frozenset(tools),
        )

    def error_body(self, refusal: Refusal) -> dict[str, Any]:
        return openai_body(refusal)

    def whole(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        return completion(body, reply)

    def stream(self, body: dict[str, Any], reply: Reply) -> Iterator[bytes]:
        for chunk in chunks(body, reply):
            yield b"data: " + json.dumps(chunk).encode() + b"\n\n"
        yield b"data: [DONE]\n\n"


def message(reply: Reply) -> dict[str, Any]:
    answer: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.refusal is not None:
        answer["refusal"] = reply.refusal
    if reply.calls:
        answer["tool_calls"] = [
            {
                "id": call_id(reply, index),
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for index, call in enumerate(reply.calls)
        ]
    return answer


def usage(body: dict[str, Any], answer: dict[str, Any]) -> dict[str, int]:
    """Deterministic token counts: a quarter of the characters, at least one."""
    prompt = max(1, len(json.dumps(body.get("messages"))) // 4)
    completion_tokens = max(1, len(json.dumps(answer)) // 4)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt + completion_tokens,
    }


def completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    answer = message(reply)
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 1,
        "model": f"{body.get('model')}{REPORTED_SUFFIX}",
        "choices": [
            {"index": 0, "message": answer, "finish_reason": reply.finish, "logprobs": None}
        ],
        "usage": reply.usage or usage(body, answer),
    }


def chunks(body: dict[str, Any], reply: Reply) -> Iterator[dict[str, Any]]:
    """The answer as SSE deltas that add up to `completion(body, reply)`."""
    answer = message(reply)
    base = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": f"{body.get('model')}{REPORTED_SUFFIX}",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    content = reply.text or ""
    for start in range(0, len(content), 3):
        yield chunk({"content": content[start : start + 3]})
    if reply.refusal is not None:
        yield chunk({"refusal": reply.refusal})
    for index, call in enumerate(answer.get("tool_calls") or []):
        function = call["function"]
        opening = {
            "index": index,
            "id": call["id"],
            "type": "function",
            "function": {"name": function["name"], "arguments": ""},
        }
        yield chunk({"tool_calls": [opening]})
        arguments = function["arguments"]
        for start in range(0, len(arguments), 5):
            piece = {"index": index, "function": {"arguments": arguments[start : start + 5]}}
            yield chunk({"tool_calls": [piece]})
    yield chunk({}, reply.finish)
    if (body.get("stream_options") or {}).get("include_usage"):
        yield {**base, "choices": [], "usage": reply.usage or usage(body, answer)}
