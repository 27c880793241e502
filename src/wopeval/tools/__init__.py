"""Tools: the registry and its three kinds (builtin counter, python callables, HTTP)."""

from __future__ import annotations

from wopeval.tools.base import Secret, Tool, ToolContext, ToolFailure
from wopeval.tools.counter import COUNTER_TOOL, CounterTool
from wopeval.tools.http import Credential, HttpTool
from wopeval.tools.python import PythonTool, load_callable


class ToolRegistry:
    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}

    def add(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is registered twice")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return sorted(self._tools)


__all__ = [
    "COUNTER_TOOL",
    "CounterTool",
    "Credential",
    "HttpTool",
    "PythonTool",
    "Secret",
    "Tool",
    "ToolContext",
    "ToolFailure",
    "ToolRegistry",
    "load_callable",
]
