"""The python side of the agent-output project: its one tool, and a python agent using it."""

from __future__ import annotations

from typing import Any


async def lookup(args: dict[str, Any]) -> dict[str, Any]:
    return {"key": args["key"], "value": f"{args['key']}-value"}


async def python_lookup(context: Any) -> Any:
    """Calls the tool and never reads its model proxy: it was not handed one."""
    return await context.call_tool("out:lookup", {"key": context.input["key"]})
