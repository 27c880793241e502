"""Chat-completions streaming (SSE) for the model proxy: reading deltas, writing a recording.

An upstream's stream is relayed to the agent line by line as it arrives;
`StreamedAnswer` reads the same lines into one chat-completions body (content
and refusal pieces joined, tool-call argument deltas joined by their index),
so a streamed exchange is recorded exactly like one answered whole. A
replayed answer is written back as the deltas an OpenAI server would send.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

from wopeval.agents import ModelAnswer


@dataclass
class _ToolCall:
    id: str | None = None
    name: str = ""
    arguments: str = ""


@dataclass
class StreamedAnswer:
    """The chat completion that a stream of `data:` lines adds up to."""

    id: str | None = None
    model: str | None = None
    content: str | None = None
    refusal: str | None = None
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    done: bool = False
    _calls: dict[int, _ToolCall] = field(default_factory=dict)

    def feed(self, line: str) -> None:
        if not line.startswith("data:"):
            return
        data = line.removeprefix("data:").strip()
        if data == "[DONE]":
            self.done = True
            return
        try:
            chunk = json.loads(data)
        except ValueError:
            return
        if not isinstance(chunk, dict):
            return
        self.id = self.id or _text(chunk.get("id"))
        self.model = self.model or _text(chunk.get("model"))
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                self._choice(choice)

    def _choice(self, choice: dict[str, Any]) -> None:
        delta: dict[str, Any] = _object(choice.get("delta"))
        if isinstance(delta.get("content"), str):
            self.content = (self.content or "") + delta["content"]
        if isinstance(delta.get("refusal"), str):
            self.refusal = (self.refusal or "") + delta["refusal"]
        for piece in delta.get("tool_calls") or []:
            if not isinstance(piece, dict):
                continue
            call = self._calls.setdefault(int(piece.get("index", 0)), _ToolCall())
            call.id = call.id or _text(piece.get("id"))
            function = _object(piece.get("function"))
            call.name += _text(function.get("name")) or ""
            call.arguments += _text(function.get("arguments")) or ""
        if isinstance(choice.get("finish_reason"), str):
            self.finish_reason = choice["finish_reason"]

    @property
    def complete(self) -> bool:
        """The stream named a finish reason: the answer is whole."""
        return self.finish_reason is not None

    def completion(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.refusal is not None:
            message["refusal"] = self.refusal
        if self._calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for _, call in sorted(self._calls.items())
            ]
        body: dict[str, Any] = {
            "id": self.id,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}],
        }
        if self.usage is not None:
            body["usage"] = self.usage
        return body


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def replayed_stream(answer: ModelAnswer, *, include_usage: bool) -> Iterator[bytes]:
    """A recorded answer as the SSE deltas of an OpenAI server, ending in `[DONE]`."""
    completion = answer.completion()
    base = {
        "id": completion["id"],
        "object": "chat.completion.chunk",
        "created": 0,
        "model": completion["model"],
    }
    delta: dict[str, JsonValue] = {"role": "assistant", "content": answer.content}
    if answer.refusal is not None:
        delta["refusal"] = answer.refusal
    yield _event({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    for index, call in enumerate(answer.tool_calls):
        piece = {
            "index": index,
            "id": call.call_id,
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments},
        }
        yield _event(
            {
                **base,
                "choices": [{"index": 0, "delta": {"tool_calls": [piece]}, "finish_reason": None}],
            }
        )
    ending = {"index": 0, "delta": {}, "finish_reason": answer.finish_reason}
    yield _event({**base, "choices": [ending]})
    if include_usage and "usage" in completion:
        yield _event({**base, "choices": [], "usage": completion["usage"]})
    yield b"data: [DONE]\n\n"


def _event(chunk: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"
