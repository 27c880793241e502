"""An MCP server whose one tool answers odd but legal JSON text (stdio or Streamable HTTP).

`answer` with `{"kind": "surrogate"}` answers a text block holding a lone surrogate
(`"\\ud800"`), with `{"kind": "deep"}` a structured result nested 300 levels deep, and
with `{"kind": "plain"}` an ordinary one. Written by hand, as a server in another language
may write them: the official SDK's server could not (its writer refuses both). Every
line or body is JSON-RPC 2.0 as the SDK's client expects it (RFC 8259 text; a Streamable
HTTP answer as `application/json`, notifications accepted with 202; it gives no session id, so
the client neither GETs a stream nor DELETEs a session).

    python _odd_server.py              # stdio
    python _odd_server.py --http PORT  # Streamable HTTP at /mcp
"""

from __future__ import annotations

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEPTH = 300

ANSWERS = {
    "surrogate": '{"content":[{"type":"text","text":"\\ud800"}],"isError":false}',
    "deep": '{"content":[{"type":"text","text":"deep"}],"structuredContent":{"odd":'
    + "[" * DEPTH
    + "]" * DEPTH
    + '},"isError":false}',
    "plain": '{"content":[{"type":"text","text":"plain"}],"isError":false}',
}

TOOL = {
    "name": "answer",
    "description": "Answers the odd content `kind` names.",
    "inputSchema": {
        "type": "object",
        "properties": {"kind": {"type": "string"}},
        "required": ["kind"],
    },
}


def answered(message: dict[str, Any]) -> str | None:
    """The JSON-RPC answer text to `message`; None for a notification."""
    if "id" not in message:
        return None
    method = message["method"]
    if method == "initialize":
        result = json.dumps(
            {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "odd", "version": "1"},
            }
        )
    elif method == "tools/list":
        result = json.dumps({"tools": [TOOL]})
    elif method == "tools/call":
        result = ANSWERS[message["params"]["arguments"]["kind"]]
    elif method == "ping":
        result = "{}"
    else:
        error = {"code": -32601, "message": f"no method {method}"}
        return json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error})
    return f'{{"jsonrpc":"2.0","id":{json.dumps(message["id"])},"result":{result}}}'


def serve_stdio() -> None:
    for line in sys.stdin:
        if line.strip():
            text = answered(json.loads(line))
            if text is not None:
                sys.stdout.write(text + "\n")
                sys.stdout.flush()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        text = answered(json.loads(body))
        if text is None:
            self._send(202, b"")
        else:
            self._send(200, text.encode("ascii"), "application/json")

    def _send(self, status: int, body: bytes, content_type: str | None = None) -> None:
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int)
    options = parser.parse_args()
    if options.http is None:
        serve_stdio()
    else:
        ThreadingHTTPServer(("127.0.0.1", options.http), _Handler).serve_forever()


if __name__ == "__main__":
    main()
