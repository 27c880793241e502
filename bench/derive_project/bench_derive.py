"""The derivation bench's agent and tool: `{"calls": [...], "answer": x}` and a no-op.

Run by the source workflow, every call is live and recorded; run by an eval with
`fixtureRuns`, every call is served from the fixtures derived from that record.
"""

from __future__ import annotations

from typing import Any


async def decide(context: Any) -> Any:
    for call in context.input.get("calls", []):
        await context.call_tool(call["tool"], call["args"])
    return context.input["answer"]


async def noop(args: dict[str, Any]) -> dict[str, Any]:
    return {"echo": args}
