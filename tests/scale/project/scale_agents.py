"""The scale tier's agents.

`decide`, input `{"sleep": s, "gate": path, "calls": [...], "answer": x, "kill": bool}`:
it waits `sleep` seconds, and with `gate` until that file exists, makes its calls
(fixture-served in most suites), and decides `answer`. With `kill` it ends its own process
with SIGKILL: a trial that takes its worker down every time (a poison trial).

`gated`, input `{"dir": d}`: the test steps each attempt by files in `d`.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any


async def decide(context: Any) -> Any:
    given = context.input
    if given.get("kill"):
        os.kill(os.getpid(), signal.SIGKILL)
    await asyncio.sleep(float(given.get("sleep", 0)))
    if "gate" in given:
        gate = Path(given["gate"])
        while not await asyncio.to_thread(gate.exists):  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    for call in given.get("calls", []):
        await context.call_tool(call["tool"], call["args"])
    return given["answer"]


async def lookup(args: Any) -> Any:
    """`scale:lookup` run live: the suites serve it from fixtures, so a live call is a miss."""
    raise RuntimeError(f"scale:lookup has no live answer ({args})")


async def gated(context: Any) -> Any:
    """Attempt `i` (counted by the files, whichever worker runs it) touches `entered-i` and
    waits for `gate-i`; cut while it waits (an immediate pause), it touches `cut-i`."""
    base = Path(context.input["dir"])
    index = len(await asyncio.to_thread(lambda: list(base.glob("entered-*"))))
    await asyncio.to_thread((base / f"entered-{index}").touch)
    try:
        while not await asyncio.to_thread((base / f"gate-{index}").exists):  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    except asyncio.CancelledError:
        (base / f"cut-{index}").touch()
        raise
    return "released"
