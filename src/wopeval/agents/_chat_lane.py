"""The openai lane's dialect: OpenAI Chat Completions through the official `openai` SDK.

The system prompt is the first message; tools are function tools; each
result goes back as a `tool` message. `max_tokens` is the name every
OpenAI-compatible server accepts; `response_format = "json"` asks for
`{"type": "json_object"}`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

from pydantic import JsonValue

import wopeval.agents._retry as _retry
from wopeval.agents._dialect import Ask, FunctionCall, LlmLane, ToolReply, Turn, json_arguments
from wopeval.agents.base import AgentFailed, ToolSpec
from wopeval.models import (
    CHAT,
    ChatAnswer,
    ChatCompletions,
    LiveAnswer,
    ModelAnswer,
    ModelCallFailed,
)

_NO_KEY = "no-key"
"""What the SDK presents when the server needs no key (a local server): it insists on one."""


@dataclass(frozen=True)
class ChatDialect:
    lane: LlmLane

    @property
    def api(self) -> ChatCompletions:
        return CHAT

    @asynccontextmanager
    async def session(self) -> AsyncIterator[Ask]:
        # Imported here, not with the module: the SDK's pydantic models cost every host
        # process its start-up time, and only an openai-lane agent needs them.
        import openai
        from openai.types.chat import ChatCompletion

        reveal = self.lane.api_key

        async def key() -> str:
            return _NO_KEY if reveal is None else reveal()

        async with openai.AsyncOpenAI(
            api_key=key,
            base_url=self.lane.base_url,
            timeout=self.lane.timeout_seconds,
            max_retries=0,
        ) as client:

            async def ask(body: dict[str, JsonValue]) -> LiveAnswer:
                async def send() -> ModelAnswer:
                    completion = await client.post(
                        CHAT.upstream_path, body=body, cast_to=ChatCompletion
                    )
                    try:
                        return CHAT.answer(completion.model_dump(mode="json"))
                    except ValueError:
                        raise ModelCallFailed(
                            "the model API's answer is not a chat completion",
                            {"code": "malformed"},
                        ) from None

                return await _retry.retried(send, _refusal, self.lane.retries, self.lane.base_url)

            yield ask

    def tools(self, specs: Sequence[ToolSpec], functions: dict[str, str]) -> list[JsonValue]:
        by_tool = {spec.name: spec for spec in specs}
        tools: list[JsonValue] = []
        for name, tool in functions.items():
            spec = by_tool[tool]
            function: dict[str, JsonValue] = {"name": name, "parameters": spec.input_schema}
            if spec.description:
                function["description"] = spec.description
            tools.append({"type": "function", "function": function})
        return tools

    def body(self, messages: list[JsonValue], tools: list[JsonValue]) -> dict[str, JsonValue]:
        lane = self.lane
        system: list[JsonValue] = []
        if lane.system_prompt:
            system.append({"role": "system", "content": lane.system_prompt})
        body: dict[str, JsonValue] = {"model": lane.model, "messages": [*system, *messages]}
        if tools:
            body["tools"] = tools
            if lane.parallel_tool_calls is not None:
                body["parallel_tool_calls"] = lane.parallel_tool_calls
        if lane.temperature is not None:
            body["temperature"] = lane.temperature
        if lane.max_tokens is not None:
            body["max_tokens"] = lane.max_tokens
        if lane.response_format == "json":
            body["response_format"] = {"type": "json_object"}
        return body

    def turn(self, answer: ModelAnswer) -> Turn:
        read = ChatAnswer(answer.document)
        if read.refusal is not None:
            raise AgentFailed(f"the model refused: {read.refusal}")
        reason = read.finish_reason
        if reason == "length":
            raise AgentFailed(f"the model's answer was cut off (max_tokens {self.lane.max_tokens})")
        if reason == "content_filter":
            raise AgentFailed("the model's answer was withheld by its content filter")
        calls = read.tool_calls
        if not calls and read.content is None:
            raise AgentFailed("the model answered neither content nor tool calls")
        return Turn(
            [
                FunctionCall(call.call_id, call.name, json_arguments(call.name, call.arguments))
                for call in calls
            ],
            read.content,
        )

    def replies(self, answer: ModelAnswer, results: Sequence[ToolReply]) -> list[JsonValue]:
        messages: list[JsonValue] = [ChatAnswer(answer.document).assistant_message()]
        messages.extend(
            {"role": "tool", "tool_call_id": result.call_id, "content": result.content}
            for result in results
        )
        return messages


def _refusal(exc: Exception) -> _retry.Refusal | None:
    import openai  # loaded by `session` already (see there)

    if isinstance(exc, openai.APIStatusError):
        error: dict[str, JsonValue] = {
            k: v for k, v in (("type", exc.type), ("code", exc.code)) if v
        }
        return _retry.status_refusal(
            exc.status_code, error, exc.response.headers.get("retry-after")
        )
    if isinstance(exc, openai.APITimeoutError | openai.APIConnectionError):
        return _retry.transport_refusal(exc, isinstance(exc, openai.APITimeoutError))
    return None
