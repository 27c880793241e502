"""Agents and a tool for the CLI tests; each is deterministic so exit codes are too.

- `good` decides `input.answer`, after looking up `input.lookup` when given;
- `bad` is `good` except on tasks marked `fragile`, which it gets wrong;
- `flaky` is right on every other invocation (process-wide), so N even trials
  pass exactly N/2 times whatever the phase.
"""

from __future__ import annotations

import itertools
from typing import Any

from pydantic import JsonValue

from wopeval.agents import AgentContext

_invocations = itertools.count()


async def lookup(args: Any) -> dict[str, str]:
    key = args.get("key") if isinstance(args, dict) else None
    return {"value": f"{key}-value"}


async def good(context: AgentContext) -> JsonValue:
    case = context.input if isinstance(context.input, dict) else {}
    if "lookup" in case:
        found = await context.call_tool("cli:lookup", {"key": case["lookup"]})
        return found.get("value") if isinstance(found, dict) else None
    return case.get("answer")


async def bad(context: AgentContext) -> JsonValue:
    case = context.input if isinstance(context.input, dict) else {}
    if case.get("fragile"):
        return "wrong"
    return await good(context)


async def flaky(context: AgentContext) -> JsonValue:
    if next(_invocations) % 2:
        return "wrong"
    return await good(context)


async def raises(context: AgentContext) -> JsonValue:
    """An agent with a bug: it reads a field its input does not have."""
    case = context.input if isinstance(context.input, dict) else {}
    return case["city"]
