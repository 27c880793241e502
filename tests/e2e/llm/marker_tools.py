"""The erasure scan's python tools: one answers with its args' marker, one fails quoting it."""

from typing import Any

from wopeval.tools.base import ToolFailure


async def echo(args: dict[str, Any]) -> dict[str, Any]:
    return {"echo": args["text"].replace("-args", "-result")}


async def refuse(args: dict[str, Any]) -> None:
    reason = args["reason"]
    raise ToolFailure("declined", f"declined: {reason}", details={"reason": f"{reason}-details"})
