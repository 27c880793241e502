"""The scale tier's agent: `{"sleep": s, "calls": [...], "answer": x, "kill": bool}`.

It waits `sleep` seconds, makes its calls (fixture-served in these suites), and
decides `answer`. With `kill` it ends its own process with SIGKILL: a trial
that takes its worker down every time (a poison trial).
"""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Any


async def decide(context: Any) -> Any:
    given = context.input
    if given.get("kill"):
        os.kill(os.getpid(), signal.SIGKILL)
    await asyncio.sleep(float(given.get("sleep", 0)))
    for call in given.get("calls", []):
        await context.call_tool(call["tool"], call["args"])
    return given["answer"]


async def lookup(args: Any) -> Any:
    """`scale:lookup` run live: the suites serve it from fixtures, so a live call is a miss."""
    raise RuntimeError(f"scale:lookup has no live answer ({args})")
