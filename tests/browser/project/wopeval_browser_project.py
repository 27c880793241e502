"""Agents of the dashboard tests: one held at a gate, one whose output is markup."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pydantic import JsonValue

from wopeval.agents import AgentContext

MARKUP = "<img src=x onerror=alert(1)>"
POLL_SECONDS = 0.02


async def gate(context: AgentContext) -> JsonValue:
    """Touches `input.entered`, waits until `input.gate` exists, then decides `input.answer`."""
    case = context.input if isinstance(context.input, dict) else {}
    await asyncio.to_thread(Path(str(case["entered"])).touch)
    released = Path(str(case["gate"]))
    # The test releases the gate from its own thread, so there is no Event to await.
    while not await asyncio.to_thread(released.exists):  # noqa: ASYNC110
        await asyncio.sleep(POLL_SECONDS)
    return case.get("answer", "released")


async def markup(context: AgentContext) -> JsonValue:
    """Calls the counter with markup for a key, and decides markup."""
    await context.call_tool("conformance.eval:counter", {"op": "inc", "key": MARKUP})
    return MARKUP
