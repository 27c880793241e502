"""An agent that runs as a service (the http lane), on loopback in a thread.

`POST /agent` makes the calls the invocation's input names over its `mcpUrl`
and answers `{"decision": {...}}`; `POST /broken` answers 500, `POST /hang`
never answers in time. It keeps the headers of every request it received.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from mcp import Client


async def _serve(body: dict[str, Any]) -> dict[str, Any]:
    async with Client(body["mcpUrl"]) as client:
        results = []
        for call in body["input"].get("calls", []):
            result = await client.call_tool(call["tool"], call["args"])
            results.append({"isError": result.is_error, "structured": result.structured_content})
    return {"agentId": body["agentId"], "results": results}


class AgentService:
    def __init__(self) -> None:
        self.headers: list[dict[str, str]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                service.headers.append({k.lower(): v for k, v in self.headers.items()})
                if self.path == "/broken":
                    self._answer(500, {"error": "broken"})
                elif self.path == "/hang":
                    time.sleep(5)
                    self._answer(200, {"decision": "too late"})
                else:
                    self._answer(200, {"decision": asyncio.run(_serve(body))})

            def _answer(self, status: int, document: Any) -> None:
                data = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
