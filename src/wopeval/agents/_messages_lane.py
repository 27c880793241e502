"""The anthropic lane's dialect: Anthropic Messages through the official `anthropic` SDK.

The system prompt is the request's `system`; tools are `{name, description,
input_schema}`; the model's `tool_use` blocks are its calls, and their results
go back in one user message of `tool_result` blocks (`is_error` on a failed
call). `max_tokens`, which the API requires, defaults to 4096;
`parallel_tool_calls = false` becomes `tool_choice.disable_parallel_tool_use`.
Anthropic has no JSON mode: `response_format = "json"` parses the final text.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

import wopeval.agents._retry as _retry
from wopeval.agents._dialect import Ask, FunctionCall, LlmLane, ToolReply, Turn
from wopeval.agents.base import AgentFailed, ToolSpec
from wopeval.models import MESSAGES, LiveAnswer, Messages, ModelAnswer, ModelCallFailed

DEFAULT_MAX_TOKENS = 4096
_NO_KEY = "no-key"
"""What the SDK presents when the server needs no key (a local server)."""
_REPLAYED = ("text", "tool_use", "thinking", "redacted_thinking")
"""Blocks the next request carries back, as the API takes them."""


@dataclass(frozen=True)
class MessagesDialect:
    lane: LlmLane

    @property
    def api(self) -> Messages:
        return MESSAGES

    @asynccontextmanager
    async def session(self) -> AsyncIterator[Ask]:
        # Imported here, not with the module: the SDK's ~1,000 pydantic models (and its
        # HTTP client) cost every host process a second at start, and only an
        # anthropic-lane agent needs them.
        import anthropic
        import httpx2

        reveal = self.lane.api_key
        # An explicit key keeps the SDK from looking for one of its own (the host's
        # environment, a profile on disk).
        async with anthropic.AsyncAnthropic(
            api_key=_NO_KEY if reveal is None else reveal(),
            base_url=self.lane.base_url,
            timeout=self.lane.timeout_seconds,
            max_retries=0,
        ) as client:

            async def ask(body: dict[str, JsonValue]) -> LiveAnswer:
                async def send() -> ModelAnswer:
                    response = await client.post(
                        MESSAGES.upstream_path, body=body, cast_to=httpx2.Response
                    )
                    try:
                        return MESSAGES.answer(response.json())
                    except ValueError:
                        raise ModelCallFailed(
                            "the model API's answer is not a message", {"code": "malformed"}
                        ) from None

                return await _retry.retried(send, _refusal, self.lane.retries, self.lane.base_url)

            yield ask

    def tools(self, specs: Sequence[ToolSpec], functions: dict[str, str]) -> list[JsonValue]:
        by_tool = {spec.name: spec for spec in specs}
        tools: list[JsonValue] = []
        for name, tool in functions.items():
            spec = by_tool[tool]
            entry: dict[str, JsonValue] = {"name": name, "input_schema": spec.input_schema}
            if spec.description:
                entry["description"] = spec.description
            tools.append(entry)
        return tools

    def body(self, messages: list[JsonValue], tools: list[JsonValue]) -> dict[str, JsonValue]:
        lane = self.lane
        body: dict[str, JsonValue] = {
            "model": lane.model,
            "max_tokens": lane.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": list(messages),
        }
        if lane.system_prompt:
            body["system"] = lane.system_prompt
        if tools:
            body["tools"] = tools
            if lane.parallel_tool_calls is False:
                body["tool_choice"] = {"type": "auto", "disable_parallel_tool_use": True}
        if lane.temperature is not None:
            body["temperature"] = lane.temperature
        return body

    def turn(self, answer: ModelAnswer) -> Turn:
        document = answer.document
        reason = document.get("stop_reason")
        if reason == "refusal":
            raise AgentFailed("the model refused")
        if reason == "max_tokens":
            limit = self.lane.max_tokens or DEFAULT_MAX_TOKENS
            raise AgentFailed(f"the model's answer was cut off (max_tokens {limit})")
        blocks = [b for b in _blocks(document) if b.get("type") in ("text", "tool_use")]
        calls = [
            FunctionCall(str(b.get("id")), str(b.get("name")), b.get("input"))
            for b in blocks
            if b.get("type") == "tool_use"
        ]
        texts = [str(b.get("text") or "") for b in blocks if b.get("type") == "text"]
        if not calls and not texts:
            raise AgentFailed("the model answered neither text nor tool calls")
        return Turn(calls, "".join(texts) if texts else None)

    def replies(self, answer: ModelAnswer, results: Sequence[ToolReply]) -> list[JsonValue]:
        said: list[JsonValue] = [
            _param(b) for b in _blocks(answer.document) if b["type"] in _REPLAYED
        ]
        outcomes: list[JsonValue] = []
        for result in results:
            block: dict[str, JsonValue] = {
                "type": "tool_result",
                "tool_use_id": result.call_id,
                "content": result.content,
            }
            if result.failed:
                block["is_error"] = True
            outcomes.append(block)
        return [{"role": "assistant", "content": said}, {"role": "user", "content": outcomes}]


def _blocks(document: dict[str, JsonValue]) -> list[dict[str, Any]]:
    content = document.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _param(block: dict[str, Any]) -> JsonValue:
    """A returned block as a request takes it back: only the fields a request may carry."""
    keep = {
        "text": ("type", "text"),
        "tool_use": ("type", "id", "name", "input"),
        "thinking": ("type", "thinking", "signature"),
        "redacted_thinking": ("type", "data"),
    }[block["type"]]
    return {key: block[key] for key in keep if key in block}


def _refusal(exc: Exception) -> _retry.Refusal | None:
    import anthropic  # loaded by `session` already (see there)

    if isinstance(exc, anthropic.APIStatusError):
        found = exc.body.get("error") if isinstance(exc.body, dict) else None
        kind = found.get("type") if isinstance(found, dict) else None
        error: dict[str, JsonValue] = {"type": kind} if isinstance(kind, str) else {}
        return _retry.status_refusal(
            exc.status_code, error, exc.response.headers.get("retry-after")
        )
    if isinstance(exc, anthropic.APITimeoutError | anthropic.APIConnectionError):
        return _retry.transport_refusal(exc, isinstance(exc, anthropic.APITimeoutError))
    return None
