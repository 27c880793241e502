"""A stdio MCP server that gives away its credential: the boundary must not pass it on.

The host starts it with its credential in `LEAKY_TOKEN` (`server_env`). `whoami`
answers with it (the success path), `leak` fails with it in its error text and
`dump` fails with its whole environment, as a careless server's error page would.
Each start appends its pid to the file `STARTS_LOG` names, when it names one.

    python _leaky_server.py
"""

from __future__ import annotations

import json
import os

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("leaky")


@server.tool()
def whoami() -> str:
    """Answers with the credential it was started with."""
    return f"I am {os.environ.get('LEAKY_TOKEN')}"


@server.tool()
def leak(reason: str) -> str:
    """Fails, saying its credential."""
    raise ToolError(f"{reason}: refused with key {os.environ.get('LEAKY_TOKEN')}")


@server.tool()
def dump() -> str:
    """Fails with its whole environment."""
    raise ToolError(json.dumps(dict(os.environ)))


if __name__ == "__main__":
    starts = os.environ.get("STARTS_LOG")
    if starts:
        with open(starts, "a", encoding="utf-8") as log:
            log.write(f"{os.getpid()}\n")
    server.run("stdio")
