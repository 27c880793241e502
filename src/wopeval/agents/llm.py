"""The LLM lanes: an agent whose tool loop the host runs against a model (docs/llm.md).

`lane = "openai"` speaks OpenAI Chat Completions through the official `openai`
SDK (any OpenAI-compatible server); `lane = "anthropic"` speaks Anthropic
Messages through the official `anthropic` SDK. The loop is the same: each
turn sends the conversation, with the agent's tools as functions, and hands
the exchange to the invocation's model recorder (`context.call_model`):
recorded, or answered from a recording under model replay. Each tool call the
model asks for goes through the one tool boundary (`context.call_tool`) and
its result goes back to the model, until it answers without tool calls: that
answer is the decision (parsed JSON for `response_format = "json"`). What
differs — the request's shape, how an answer is read, how results go back —
is the lane's `Dialect` (`_chat_lane.py`, `_messages_lane.py`).

A refused, cut-off or malformed answer, an API error after the retries, or
`max_turns` turns without a final answer fail the invocation with the reason.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable

from pydantic import JsonValue

from wopeval.agents._chat_lane import ChatDialect
from wopeval.agents._dialect import (
    Dialect,
    FunctionCall,
    LlmLane,
    ResponseFormat,
    ToolReply,
)
from wopeval.agents._messages_lane import MessagesDialect
from wopeval.agents.base import AgentContext, AgentFailed, ToolCallError
from wopeval.models import ModelRequest, Provider

DIALECTS: dict[Provider, Callable[[LlmLane], Dialect]] = {
    "openai": ChatDialect,
    "anthropic": MessagesDialect,
}
"""The dialect of each lane's provider: `lane = "openai"` and `lane = "anthropic"`."""


class LlmAgent:
    def __init__(self, lane: LlmLane) -> None:
        self._lane = lane
        self._dialect = DIALECTS[lane.provider](lane)

    @property
    def lane(self) -> LlmLane:
        """The entry it runs, resolved."""
        return self._lane

    async def invoke(self, context: AgentContext) -> JsonValue:
        lane, dialect = self._lane, self._dialect
        specs = context.tool_specs()
        # Offered by their provider-safe names; a call names a tool by one
        # (engine/recording/tool_names.py).
        functions = {spec.offered_name: spec.name for spec in specs}
        tools = dialect.tools(specs, functions)
        messages: list[JsonValue] = [{"role": "user", "content": _user_content(context.input)}]
        async with dialect.session() as ask:
            for _turn in range(lane.max_turns):
                body = dialect.body(messages, tools)
                answer = await context.call_model(
                    ModelRequest(dialect.api, body), functools.partial(ask, body)
                )
                turn = dialect.turn(answer)
                if not turn.calls:
                    return _decision(turn.text or "", lane.response_format)
                results = [await _reply(context, call) for call in turn.calls]
                messages.extend(dialect.replies(answer, results))
        raise AgentFailed(f"the model gave no final answer within max_turns ({lane.max_turns})")


def _user_content(value: JsonValue) -> str:
    """The invocation's input as the user message: a string as is, else compact sorted JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _decision(text: str, response_format: ResponseFormat) -> JsonValue:
    if response_format == "text":
        return text
    try:
        decision: JsonValue = json.loads(text)
    except ValueError:
        raise AgentFailed("the model's final answer is not JSON (response_format json)") from None
    return decision


async def _reply(context: AgentContext, call: FunctionCall) -> ToolReply:
    """Run one call through the tool boundary: its result as JSON text, or `{"error": …}`
    (a function the model was not offered among them: the boundary refuses it)."""
    if not isinstance(call.args, dict):
        raise AgentFailed(f"the model's arguments for {call.function!r} are not a JSON object")
    try:
        result = await context.call_tool(call.function, call.args, named_by="offered")
    except ToolCallError as failure:
        error = json.dumps({"error": failure.error}, ensure_ascii=False)
        return ToolReply(call.call_id, error, failed=True)
    content = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
    return ToolReply(call.call_id, content, failed=False)
