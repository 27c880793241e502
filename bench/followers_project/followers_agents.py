"""The followers bench's runs: a gate that holds a run until the bench's file exists, N calls."""

import asyncio
from pathlib import Path
from typing import Any


async def gate_agent(context: Any) -> str:
    gate = Path(context.input["gate"])
    # The gate is a file another process writes: a 10 ms poll is all it needs.
    while not gate.exists():  # noqa: ASYNC110, ASYNC240
        await asyncio.sleep(0.01)
    return "released"


async def calls_agent(context: Any) -> str:
    if "gate" in context.input:  # an eval's first task is its gate
        await gate_agent(context)
    for index in range(context.input["calls"]):
        await context.call_tool("followers:echo", {"index": index})
    return "done"


async def echo(args: dict[str, Any]) -> dict[str, Any]:
    return args
