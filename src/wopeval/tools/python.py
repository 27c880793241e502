"""Python tools: an async callable `(args) -> result` named by a dotted path."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, cast, get_origin, get_type_hints

from pydantic import JsonValue, TypeAdapter

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


def derived_input_schema(function: Callable[..., Any]) -> dict[str, JsonValue]:
    """The JSON Schema of a python tool's args, from its first parameter's type hint.

    A TypedDict, dataclass or pydantic model gives its own schema; no hint (or a
    plain `dict`) gives `{"type": "object"}`: any object, described by nothing.
    """
    parameters = list(inspect.signature(function).parameters.values())
    hints = get_type_hints(function) if parameters else {}
    hint = hints.get(parameters[0].name) if parameters else None
    if hint is None or hint in (dict, Any) or get_origin(hint) is dict:
        return {"type": "object"}
    schema: dict[str, JsonValue] = TypeAdapter(hint).json_schema()
    return schema
