"""Python tools: an async callable `(args) -> result` named by a dotted path."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, cast

from pydantic import JsonValue

from wopeval.tools.base import ToolContext

ToolFunction = Callable[[Any], Awaitable[JsonValue]]


def load_callable(path: str) -> Callable[..., Any]:
    """Import `package.module:attr` (or `package.module.attr`)."""
    module_name, sep, attr = path.partition(":")
    if not sep:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise ValueError(f"{path!r} is not a dotted path to a callable")
    target = getattr(importlib.import_module(module_name), attr, None)
    if not callable(target):
        raise ValueError(f"{path!r} does not name a callable")
    return cast(Callable[..., Any], target)


class PythonTool:
    def __init__(self, name: str, function: ToolFunction) -> None:
        if not inspect.iscoroutinefunction(function):
            raise ValueError(f"tool {name!r}: {function!r} must be an async function")
        self.name = name
        self._function = function

    async def call(self, args: JsonValue, context: ToolContext) -> JsonValue:
        return await self._function(args)
