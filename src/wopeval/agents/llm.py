"""The openai lane: an LLM agent whose tool loop the host runs (docs/llm.md).

Each turn sends the conversation, with the agent's tools as function tools,
to an OpenAI-compatible chat-completions server through the official
`openai` SDK, and hands the exchange to the invocation's model recorder
(`context.call_model`): recorded, or answered from a recording under model
replay. Each tool call the model asks for goes through the one tool boundary
(`context.call_tool`) and its result goes back to the model, until it answers
without tool calls: that answer is the decision (parsed JSON for
`response_format = "json"`).

A refused, cut-off or malformed answer, an API error after the retries, or
`max_turns` turns without a final answer fail the invocation with the reason.
Retries (429, 5xx, timeouts, connection errors) wait for the server's
`Retry-After` when it gives one, else back off exponentially.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import httpx2
import openai
from openai.types.chat import ChatCompletion
from pydantic import JsonValue

from wopeval.agents.base import AgentContext, AgentFailed, ToolCallError, ToolSpec
from wopeval.agents.exchange import (
    LiveAnswer,
    ModelAnswer,
    ModelCallFailed,
    ModelRequest,
    ToolCallRequest,
    normalised_answer,
)

ResponseFormat = Literal["text", "json"]
DEFAULT_MAX_TURNS = 10
DEFAULT_RETRIES = 2
MAX_RETRY_AFTER_SECONDS = 30.0
_NO_KEY = "no-key"
"""What the SDK presents when the server needs no key (a local server): it insists on one."""


@dataclass(frozen=True)
class OpenAILane:
    """An `[[agents]] lane = "openai"` entry, resolved."""

    model: str
    base_url: str
    api_key: Callable[[], str] | None
    """Reveals the key at egress; None: the server needs none."""
    system_prompt: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    max_turns: int = DEFAULT_MAX_TURNS
    parallel_tool_calls: bool | None = None
    response_format: ResponseFormat = "text"
    timeout_seconds: float = 60.0
    """Per model request."""
    retries: int = DEFAULT_RETRIES


class OpenAIAgent:
    def __init__(self, lane: OpenAILane) -> None:
        self._lane = lane

    async def invoke(self, context: AgentContext) -> JsonValue:
        lane = self._lane
        specs = context.tool_specs()
        # Offered by their provider-safe names; a call names a tool by one (engine/tool_names.py).
        functions = {spec.offered_name: spec.name for spec in specs}
        tools = _function_tools(specs)
        messages: list[JsonValue] = []
        if lane.system_prompt:
            messages.append({"role": "system", "content": lane.system_prompt})
        messages.append({"role": "user", "content": _user_content(context.input)})
        async with self._client() as client:
            for _turn in range(lane.max_turns):
                body = self._body(messages, tools)
                answer = await context.call_model(
                    ModelRequest(body), functools.partial(self._ask, client, body)
                )
                calls = _checked(answer, lane.max_tokens)
                if not calls:
                    return _decision(answer, lane.response_format)
                messages.append(answer.assistant_message())
                for call in calls:
                    tool = functions.get(call.name)
                    if tool is None:
                        raise AgentFailed(
                            f"the model called {call.name!r}, which it was not offered"
                        )
                    content = await _tool_result(
                        context, tool, _arguments(call.name, call.arguments)
                    )
                    messages.append(
                        {"role": "tool", "tool_call_id": call.call_id, "content": content}
                    )
        raise AgentFailed(f"the model gave no final answer within max_turns ({lane.max_turns})")

    def _client(self) -> openai.AsyncOpenAI:
        reveal = self._lane.api_key

        async def key() -> str:
            return _NO_KEY if reveal is None else reveal()

        # The SDK does no retries of its own: ours are counted and recorded with the exchange.
        return openai.AsyncOpenAI(
            api_key=key,
            base_url=self._lane.base_url,
            timeout=self._lane.timeout_seconds,
            max_retries=0,
        )

    def _body(self, messages: list[JsonValue], tools: list[JsonValue]) -> dict[str, JsonValue]:
        lane = self._lane
        body: dict[str, JsonValue] = {"model": lane.model, "messages": list(messages)}
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

    async def _ask(self, client: openai.AsyncOpenAI, body: dict[str, JsonValue]) -> LiveAnswer:
        attempts = 0
        while True:
            attempts += 1
            try:
                completion = await client.post(
                    "/chat/completions", body=body, cast_to=ChatCompletion
                )
            except openai.APIStatusError as exc:
                error: dict[str, JsonValue] = {"status": exc.status_code}
                error.update({k: v for k, v in (("type", exc.type), ("code", exc.code)) if v})
                retryable = exc.status_code == 429 or exc.status_code >= 500
                if not retryable or attempts > self._lane.retries:
                    raise ModelCallFailed(
                        f"the model API answered HTTP {exc.status_code}" + _after(attempts),
                        error,
                        attempts,
                    ) from None
                await asyncio.sleep(_delay(exc.response.headers, attempts))
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                timed_out = isinstance(exc, openai.APITimeoutError)
                if attempts > self._lane.retries:
                    reason = "did not answer in time" if timed_out else "could not be reached"
                    code = "timeout" if timed_out else "unreachable"
                    raise ModelCallFailed(
                        f"the model API {reason}{_after(attempts)}", {"code": code}, attempts
                    ) from None
                await asyncio.sleep(_delay(httpx2.Headers(), attempts))
            else:
                try:
                    answer = normalised_answer(completion.model_dump(mode="json"))
                except ValueError:
                    raise ModelCallFailed(
                        "the model API's answer is not a chat completion", {"code": "malformed"}
                    ) from None
                return LiveAnswer(answer, attempts)


def _function_tools(specs: Sequence[ToolSpec]) -> list[JsonValue]:
    """The offered tools as function tools, by their offered names."""
    tools: list[JsonValue] = []
    for spec in specs:
        function: dict[str, JsonValue] = {
            "name": spec.offered_name,
            "parameters": spec.input_schema,
        }
        if spec.description:
            function["description"] = spec.description
        tools.append({"type": "function", "function": function})
    return tools


def _user_content(value: JsonValue) -> str:
    """The invocation's input as the user message: a string as is, else compact sorted JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _checked(answer: ModelAnswer, max_tokens: int | None) -> list[ToolCallRequest]:
    if answer.refusal is not None:
        raise AgentFailed(f"the model refused: {answer.refusal}")
    reason = answer.finish_reason
    if reason == "length":
        raise AgentFailed(f"the model's answer was cut off (max_tokens {max_tokens})")
    if reason == "content_filter":
        raise AgentFailed("the model's answer was withheld by its content filter")
    calls = answer.tool_calls
    if not calls and answer.content is None:
        raise AgentFailed("the model answered neither content nor tool calls")
    return calls


def _decision(answer: ModelAnswer, response_format: ResponseFormat) -> JsonValue:
    content = answer.content or ""
    if response_format == "text":
        return content
    try:
        decision: JsonValue = json.loads(content)
    except ValueError:
        raise AgentFailed("the model's final answer is not JSON (response_format json)") from None
    return decision


def _arguments(function: str, arguments: str) -> JsonValue:
    try:
        args: JsonValue = json.loads(arguments or "{}")
    except ValueError:
        raise AgentFailed(f"the model's arguments for {function!r} are not JSON") from None
    if not isinstance(args, dict):
        raise AgentFailed(f"the model's arguments for {function!r} are not a JSON object")
    return args


async def _tool_result(context: AgentContext, tool: str, args: JsonValue) -> str:
    """The tool message's content: the result as JSON text, or `{"error": …}` when it failed."""
    try:
        result = await context.call_tool(tool, args)
    except ToolCallError as failure:
        return json.dumps({"error": failure.error}, ensure_ascii=False)
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)


def _after(attempts: int) -> str:
    return "" if attempts == 1 else f" (after {attempts} attempts)"


def _delay(headers: httpx2.Headers, attempts: int) -> float:
    """The server's `Retry-After` (seconds, at most 30), else 0.5 s doubling to 8 s."""
    given = headers.get("retry-after")
    if given is not None:
        try:
            return min(max(float(given), 0.0), MAX_RETRY_AFTER_SECONDS)
        except ValueError:
            pass
    return float(min(0.5 * 2 ** (attempts - 1), 8.0))
