"""OpenAI Chat Completions (`POST …/v1/chat/completions`), whole and streamed.

An answer is recorded normalised — `{id, model, content, refusal, toolCalls,
finishReason, usage}` from its first choice — so one recorded streamed and one
recorded whole look the same. A streamed answer is read from its `data:`
deltas (content and refusal pieces joined, tool-call argument deltas joined by
their index); a replayed one is written back as the deltas an OpenAI server
sends, ending in `data: [DONE]`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

import wopeval.models._sse as _sse
from wopeval.models._api import (
    ApiName,
    InvalidModelRequest,
    ModelAnswer,
    ModelRequest,
    Usage,
    integer,
    json_object,
    text,
)
from wopeval.models._openai import OpenAIApi
from wopeval.wire.json_text import JsonObject


@dataclass(frozen=True)
class ToolCallRequest:
    """One function call the model asked for."""

    call_id: str
    name: str
    arguments: str
    """The arguments as the model wrote them: JSON text (maybe not valid JSON)."""


@dataclass(frozen=True)
class ChatAnswer:
    """A recorded chat answer read by its parts (the openai lane's view of it)."""

    document: Mapping[str, JsonValue]

    @property
    def content(self) -> str | None:
        return text(self.document.get("content"))

    @property
    def refusal(self) -> str | None:
        return text(self.document.get("refusal")) or None

    @property
    def finish_reason(self) -> str | None:
        return text(self.document.get("finishReason"))

    @property
    def tool_calls(self) -> list[ToolCallRequest]:
        calls = self.document.get("toolCalls")
        if not isinstance(calls, list):
            return []
        return [
            ToolCallRequest(str(call.get("id")), str(call.get("name")), str(call.get("arguments")))
            for call in calls
            if isinstance(call, dict)
        ]

    def assistant_message(self) -> dict[str, JsonValue]:
        """The answer as the assistant message the next request carries."""
        message: dict[str, JsonValue] = {"role": "assistant", "content": self.content}
        calls = self.tool_calls
        if calls:
            message["tool_calls"] = [
                {
                    "id": call.call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in calls
            ]
        return message


class ChatCompletions(OpenAIApi):
    name: ApiName = "chat"
    upstream_path = "/chat/completions"
    transport_keys = frozenset({"stream", "stream_options"})

    def check(self, body: JsonObject) -> None:
        if not isinstance(body.get("messages"), list):
            raise InvalidModelRequest("A chat completion needs `messages`.")

    def answer(self, body: Mapping[str, Any]) -> ModelAnswer:
        """The first choice of a chat-completions body, normalised; ValueError without one."""
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ValueError("the answer has no choice")
        choice = choices[0]
        message = json_object(choice.get("message"))
        document: dict[str, JsonValue] = {
            "id": text(body.get("id")),
            "model": text(body.get("model")),
            "content": text(message.get("content")),
            "refusal": text(message.get("refusal")),
            "toolCalls": [_tool_call(call) for call in message.get("tool_calls") or []],
            "finishReason": choice.get("finish_reason"),
        }
        usage = body.get("usage")
        if isinstance(usage, dict):
            document["usage"] = {
                "promptTokens": usage.get("prompt_tokens"),
                "completionTokens": usage.get("completion_tokens"),
            }
        return ModelAnswer(document)

    def single_turn(
        self, model: str, system: str, user: str, *, max_tokens: int, temperature: float
    ) -> dict[str, JsonValue]:
        return {
            "model": model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "max_tokens": max_tokens,
            "temperature": temperature,
        }

    def answer_text(self, answer: ModelAnswer) -> str | None:
        return ChatAnswer(answer.document).content

    def assembler(self) -> StreamedChat:
        return StreamedChat(self)

    def served_whole(self, answer: ModelAnswer) -> dict[str, JsonValue]:
        read = ChatAnswer(answer.document)
        message = read.assistant_message()
        if read.refusal is not None:
            message["refusal"] = read.refusal
        body: dict[str, JsonValue] = {
            "id": answer.document.get("id") or "chatcmpl-replayed",
            "object": "chat.completion",
            "created": 0,
            "model": self.reported_model(answer) or "",
            "choices": [{"index": 0, "message": message, "finish_reason": read.finish_reason}],
        }
        usage = self.usage(answer)
        if usage is not None:
            body["usage"] = {
                "prompt_tokens": usage.input_tokens,
                "completion_tokens": usage.output_tokens,
                "total_tokens": usage.input_tokens + usage.output_tokens,
            }
        return body

    def served_stream(self, answer: ModelAnswer, request: ModelRequest) -> Iterator[bytes]:
        """The deltas of an OpenAI server: role and content, one per tool call, the finish
        reason, the usage when the request asked for it (`stream_options.include_usage`)."""
        whole = self.served_whole(answer)
        read = ChatAnswer(answer.document)
        base = {
            "id": whole["id"],
            "object": "chat.completion.chunk",
            "created": 0,
            "model": whole["model"],
        }
        delta: dict[str, JsonValue] = {"role": "assistant", "content": read.content}
        if read.refusal is not None:
            delta["refusal"] = read.refusal
        yield _chunk(base, delta)
        for index, call in enumerate(read.tool_calls):
            piece: JsonObject = {
                "index": index,
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            yield _chunk(base, {"tool_calls": [piece]})
        yield _chunk(base, {}, read.finish_reason)
        options = json_object(request.body.get("stream_options"))
        if options.get("include_usage") is True and "usage" in whole:
            yield _sse.data_event({**base, "choices": [], "usage": whole["usage"]})
        yield b"data: [DONE]\n\n"

    def usage(self, answer: ModelAnswer) -> Usage | None:
        usage = json_object(answer.document.get("usage"))
        prompt = integer(usage.get("promptTokens"))
        completion = integer(usage.get("completionTokens"))
        return None if prompt is None or completion is None else Usage(prompt, completion)


def _tool_call(call: Any) -> dict[str, JsonValue]:
    function = json_object(json_object(call).get("function"))
    return {
        "id": json_object(call).get("id"),
        "name": function.get("name"),
        "arguments": function.get("arguments") or "",
    }


def _chunk(base: JsonObject, delta: JsonObject, finish: str | None = None) -> bytes:
    return _sse.data_event(
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    )


@dataclass
class _ToolCallPieces:
    id: str | None = None
    name: str = ""
    arguments: str = ""


@dataclass
class StreamedChat:
    """The chat completion a stream of `data:` lines adds up to."""

    api: ChatCompletions
    id: str | None = None
    model: str | None = None
    content: str | None = None
    refusal: str | None = None
    finish_reason: str | None = None
    usage: JsonObject | None = None
    _calls: dict[int, _ToolCallPieces] = field(default_factory=dict)

    def feed(self, line: str) -> None:
        chunk = _sse.data_of(line)
        if chunk is None:
            return
        self.id = self.id or text(chunk.get("id"))
        self.model = self.model or text(chunk.get("model"))
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                self._choice(choice)

    def _choice(self, choice: JsonObject) -> None:
        delta = json_object(choice.get("delta"))
        if isinstance(delta.get("content"), str):
            self.content = (self.content or "") + delta["content"]
        if isinstance(delta.get("refusal"), str):
            self.refusal = (self.refusal or "") + delta["refusal"]
        for piece in delta.get("tool_calls") or []:
            if not isinstance(piece, dict):
                continue
            call = self._calls.setdefault(int(piece.get("index", 0)), _ToolCallPieces())
            call.id = call.id or text(piece.get("id"))
            function = json_object(piece.get("function"))
            call.name += text(function.get("name")) or ""
            call.arguments += text(function.get("arguments")) or ""
        finish_reason = choice.get("finish_reason")
        if isinstance(finish_reason, str):
            self.finish_reason = finish_reason

    @property
    def complete(self) -> bool:
        """The stream named a finish reason: the answer is whole."""
        return self.finish_reason is not None

    def answer(self) -> ModelAnswer:
        message: JsonObject = {"role": "assistant", "content": self.content}
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
        body: JsonObject = {
            "id": self.id,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}],
        }
        if self.usage is not None:
            body["usage"] = self.usage
        return self.api.answer(body)
