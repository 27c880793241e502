"""The gate agent: touches `input.entered` when it starts, then waits for `input.gate`."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pydantic import JsonValue

from wopeval.agents import AgentContext

POLL_SECONDS = 0.02


async def gate(context: AgentContext) -> JsonValue:
    case = context.input if isinstance(context.input, dict) else {}
    await asyncio.to_thread(Path(str(case["entered"])).touch)
    released = Path(str(case["gate"]))
    # The test releases the gate from another process, so there is no Event to await.
    while not await asyncio.to_thread(released.exists):  # noqa: ASYNC110
        await asyncio.sleep(POLL_SECONDS)
    return "released"
