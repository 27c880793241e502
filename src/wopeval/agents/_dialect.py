"""What the LLM lanes share: the resolved lane, a turn of the loop, and the `Dialect` each
model API's lane speaks (agents/llm.py runs the loop)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import JsonValue

from wopeval.agents.base import AgentFailed, ToolSpec
from wopeval.models import LiveAnswer, ModelAnswer, ModelApi, Provider

ResponseFormat = Literal["text", "json"]
DEFAULT_MAX_TURNS = 10
DEFAULT_RETRIES = 2


@dataclass(frozen=True)
class LlmLane:
    """An `[[agents]] lane = "openai"` or `lane = "anthropic"` entry, resolved."""

    provider: Provider
    """Whose API the loop speaks: `openai` (Chat Completions) or `anthropic` (Messages)."""
    model: str
    base_url: str
    api_key: Callable[[], str] | None
    """Reveals the key; None: the server needs none."""
    system_prompt: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    max_turns: int = DEFAULT_MAX_TURNS
    parallel_tool_calls: bool | None = None
    response_format: ResponseFormat = "text"
    timeout_seconds: float = 60.0
    """Per model request."""
    retries: int = DEFAULT_RETRIES


@dataclass(frozen=True)
class FunctionCall:
    """One tool call the model asked for, its arguments read."""

    call_id: str
    function: str
    args: JsonValue


@dataclass(frozen=True)
class ToolReply:
    """What goes back to the model for one call: the result as text, or the error."""

    call_id: str
    content: str
    failed: bool


@dataclass(frozen=True)
class Turn:
    calls: list[FunctionCall]
    text: str | None
    """The answer's text: the decision when it made no call."""


Ask = Callable[[dict[str, JsonValue]], Awaitable[LiveAnswer]]
"""Sends one request body upstream (with the lane's retries)."""


class Dialect(Protocol):
    """How one model API's loop talks: its requests, its answers, its tool results."""

    @property
    def api(self) -> ModelApi: ...

    def session(self) -> AbstractAsyncContextManager[Ask]:
        """The SDK client of one invocation, as the function that asks it."""
        ...

    def tools(self, specs: Sequence[ToolSpec], functions: dict[str, str]) -> list[JsonValue]:
        """The offered tools by function name (`functions`: name → tool)."""
        ...

    def body(self, messages: list[JsonValue], tools: list[JsonValue]) -> dict[str, JsonValue]: ...

    def turn(self, answer: ModelAnswer) -> Turn:
        """The answer's calls and text; AgentFailed for a refused, cut-off or empty one."""
        ...

    def replies(self, answer: ModelAnswer, results: Sequence[ToolReply]) -> list[JsonValue]:
        """The messages that carry the answer and its calls' results into the next request."""
        ...


def json_arguments(function: str, arguments: str) -> JsonValue:
    """A function call's arguments written as JSON text (OpenAI's way)."""
    try:
        args: JsonValue = json.loads(arguments or "{}")
    except ValueError:
        raise AgentFailed(f"the model's arguments for {function!r} are not JSON") from None
    return args
