"""The MCP server of the MCP end-to-end tests: it writes down every `tools/call` it receives.

Each call appends one JSON line `{pid, tool, arguments, token}` to the file
named by `CALL_LOG` before it does anything else, so a test proves "zero
calls during the replay" by the file not growing. `token` is the SHA-256 of
the credential the host injected (env `COUNTING_TOKEN` over stdio, the
`Authorization` header over HTTP), never the credential itself.

    python _counting_server.py              # stdio
    python _counting_server.py --http PORT  # Streamable HTTP at /mcp
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
from typing import TypedDict

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("counting")


class Found(TypedDict):
    key: str
    length: int


def _received(tool: str, arguments: dict[str, object], context: Context) -> None:
    token = os.environ.get("COUNTING_TOKEN")
    headers = context.headers
    if headers is not None and headers.get("authorization"):
        token = headers["authorization"]
    entry = {
        "pid": os.getpid(),
        "tool": tool,
        "arguments": arguments,
        "token": hashlib.sha256(token.encode()).hexdigest() if token else None,
    }
    with open(os.environ["CALL_LOG"], "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")


V2 = bool(os.environ.get("TOOLS_V2"))
"""The server's second version: `lookup` takes one more argument, `refuse` says more of
itself, `crash` is gone and `extra` is new, so its tool listing differs tool by tool."""

if not V2:

    @server.tool()
    def lookup(key: str, context: Context) -> Found:
        """Look `key` up: its length."""
        _received("lookup", {"key": key}, context)
        return {"key": key, "length": len(key)}

else:

    @server.tool(name="lookup")
    def lookup_v2(key: str, context: Context, strict: bool = False) -> Found:
        """Look `key` up: its length."""
        _received("lookup", {"key": key}, context)
        return {"key": key, "length": len(key)}


@server.tool(
    description="Always fails with `isError: true`" + (", giving the reason." if V2 else ".")
)
def refuse(reason: str, context: Context) -> str:
    _received("refuse", {"reason": reason}, context)
    raise ToolError(f"refused: {reason}")


@server.tool()
async def sleep(seconds: float, context: Context) -> str:
    """Answers after `seconds`."""
    _received("sleep", {"seconds": seconds}, context)
    await asyncio.sleep(seconds)
    return "slept"


if not V2:

    @server.tool()
    def crash(context: Context) -> str:
        """The server process exits mid-call."""
        _received("crash", {}, context)
        os._exit(3)

else:

    @server.tool()
    def extra(context: Context) -> str:
        """A tool the first version did not have."""
        _received("extra", {}, context)
        return "extra"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int)
    options = parser.parse_args()
    if options.http is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=options.http, stateless_http=True)


if __name__ == "__main__":
    main()
