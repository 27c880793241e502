"""The MCP-endpoint bench's tool server (bench/mcp_endpoint.py): one `echo` tool that does
nothing but answer, over stdio (the default) or Streamable HTTP (`--http PORT`).

Imports only the official `mcp` SDK: the host starts it over stdio with a bare environment.
"""

from __future__ import annotations

import argparse

from mcp.server.mcpserver import MCPServer

# WARNING: no log line per request (over stdio the host would log each one).
server = MCPServer("bench-echo", log_level="WARNING")


@server.tool()
def echo(text: str) -> str:
    """Answer `text` as it came."""
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on PORT")
    options = parser.parse_args()
    if options.http is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=options.http, stateless_http=True)


if __name__ == "__main__":
    main()
