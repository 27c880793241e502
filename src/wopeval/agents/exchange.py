"""A model exchange as agents and the host see it: the request sent and the answer normalised.

The openai lane and the model proxy (docs/llm.md) both hand their model
calls to the invocation's model recorder (`AgentContext.call_model`): the
request is the chat-completions body as sent, never its API key; the answer
is normalised to one small document whatever the server added, so a
recording made streamed and one made whole look the same.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue


@dataclass(frozen=True)
class ModelRequest:
    """A chat-completions request body (OpenAI's protocol) and how its answer travels."""

    body: dict[str, JsonValue]
    """As sent upstream; the key travels in a header and is never part of it."""
    stream: bool = False
    """The caller asked for SSE deltas (`stream: true`)."""

    @property
    def model(self) -> str | None:
        model = self.body.get("model")
        return model if isinstance(model, str) else None


@dataclass(frozen=True)
class ToolCallRequest:
    """One function call the model asked for."""

    call_id: str
    name: str
    arguments: str
    """The arguments as the model wrote them: JSON text (maybe not valid JSON)."""


@dataclass(frozen=True)
class ModelAnswer:
    """The normalised answer: `{id, model, content, refusal, toolCalls, finishReason, usage}`."""

    document: dict[str, JsonValue]

    @property
    def content(self) -> str | None:
        content = self.document.get("content")
        return content if isinstance(content, str) else None

    @property
    def refusal(self) -> str | None:
        refusal = self.document.get("refusal")
        return refusal if isinstance(refusal, str) and refusal else None

    @property
    def finish_reason(self) -> str | None:
        reason = self.document.get("finishReason")
        return reason if isinstance(reason, str) else None

    @property
    def model(self) -> str | None:
        model = self.document.get("model")
        return model if isinstance(model, str) else None

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

    @property
    def prompt_tokens(self) -> int | None:
        return _usage(self.document, "promptTokens")

    @property
    def completion_tokens(self) -> int | None:
        return _usage(self.document, "completionTokens")

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

    def completion(self) -> dict[str, JsonValue]:
        """The answer as a chat-completions response body (a replayed answer, served whole)."""
        message = self.assistant_message()
        if self.refusal is not None:
            message["refusal"] = self.refusal
        body: dict[str, JsonValue] = {
            "id": self.document.get("id") or "chatcmpl-replayed",
            "object": "chat.completion",
            "created": 0,
            "model": self.model or "",
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}],
        }
        if self.prompt_tokens is not None and self.completion_tokens is not None:
            body["usage"] = {
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens,
            }
        return body


def _usage(document: dict[str, JsonValue], name: str) -> int | None:
    usage = document.get("usage")
    value = usage.get(name) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def normalised_answer(completion: dict[str, Any]) -> ModelAnswer:
    """The first choice of a chat-completions response body as a `ModelAnswer`.

    Raises `ValueError` for a body that is not a chat completion (no choice).
    """
    choices = completion.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError("the answer has no choice")
    choice = choices[0]
    found = choice.get("message")
    message: dict[str, Any] = found if isinstance(found, dict) else {}
    document: dict[str, JsonValue] = {
        "id": completion.get("id") if isinstance(completion.get("id"), str) else None,
        "model": completion.get("model") if isinstance(completion.get("model"), str) else None,
        "content": message.get("content") if isinstance(message.get("content"), str) else None,
        "refusal": message.get("refusal") if isinstance(message.get("refusal"), str) else None,
        "toolCalls": [_tool_call(call) for call in message.get("tool_calls") or []],
        "finishReason": choice.get("finish_reason"),
    }
    usage = completion.get("usage")
    if isinstance(usage, dict):
        document["usage"] = {
            "promptTokens": usage.get("prompt_tokens"),
            "completionTokens": usage.get("completion_tokens"),
        }
    return ModelAnswer(document)


def _tool_call(call: Any) -> dict[str, JsonValue]:
    function = call.get("function") if isinstance(call, dict) else None
    function = function if isinstance(function, dict) else {}
    return {
        "id": call.get("id") if isinstance(call, dict) else None,
        "name": function.get("name"),
        "arguments": function.get("arguments") or "",
    }


class ModelCallFailed(Exception):
    """The model could not be asked or did not answer: an API error, a timeout, no upstream.

    `error` is what is recorded and shown: the HTTP status and the error's
    `type` and `code` when the server gave them — never its message text, which
    may quote a fragment of the key.
    """

    def __init__(self, reason: str, error: dict[str, JsonValue], attempts: int = 1) -> None:
        super().__init__(reason)
        self.error = error
        self.attempts = attempts


class ModelReplayMiss(Exception):
    """Model replay: the source run never made this request; nothing reached the upstream."""


@dataclass(frozen=True)
class LiveAnswer:
    answer: ModelAnswer
    attempts: int = 1


LiveModelCall = Callable[[], Awaitable[LiveAnswer]]
"""Asks the upstream model; raises `ModelCallFailed`. Called only when no recording serves."""


@dataclass(frozen=True)
class ModelUpstream:
    """Where an agent's model calls go: an OpenAI-compatible base URL and, at egress only,
    its key (`api_key()` reveals it; None: the server needs none)."""

    base_url: str
    api_key: Callable[[], str] | None
    timeout_seconds: float

    def headers(self) -> dict[str, str]:
        """The request's credential header, rendered at egress."""
        return {} if self.api_key is None else {"Authorization": f"Bearer {self.api_key()}"}
