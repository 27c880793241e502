"""The python lane: an async callable that receives the invocation context and decides."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable

from pydantic import JsonValue

from wopeval.agents.base import AgentContext

AgentFunction = Callable[[AgentContext], Awaitable[JsonValue]]


class PythonAgent:
    def __init__(self, function: AgentFunction) -> None:
        if not inspect.iscoroutinefunction(function):
            raise ValueError(f"{function!r} must be an async function")
        self._function = function

    async def invoke(self, context: AgentContext) -> JsonValue:
        return await self._function(context)
