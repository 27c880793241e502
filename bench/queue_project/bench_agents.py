"""The queue bench's agent: `{"wait": s, "burn": s, "calls": [...], "answer": x}`.

`wait` is I/O-bound time (an `asyncio.sleep`, as a model call would be), `burn`
CPU-bound time (a busy loop holding the GIL), then the calls (fixture-served in
the bench's suites) and the answer.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any


async def decide(context: Any) -> Any:
    given = context.input
    await asyncio.sleep(float(given.get("wait", 0)))
    until = time.process_time() + float(given.get("burn", 0))
    while time.process_time() < until:
        pass
    for call in given.get("calls", []):
        await context.call_tool(call["tool"], call["args"])
    return given["answer"]
