"""A customer's HTTP API on loopback (stdlib `http.server` in a thread), for the http tool kind.

It records every request it receives and answers 401 unless the request
carries the credential the test told it to expect for that path.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: Any


class LoopbackApi:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._received: list[Received] = []
        self._expected: dict[str, tuple[str, str]] = {}
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="loopback-api", daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def expect(self, path: str, header: str, value: str) -> None:
        """Requests to `path` must carry `header: value`, else they get a 401."""
        self._expected[path] = (header.lower(), value)

    def received(self, path: str) -> list[Received]:
        with self._lock:
            return [request for request in self._received if request.path == path]

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def _record(self, request: Received) -> None:
        with self._lock:
            self._received.append(request)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                headers = {name.lower(): value for name, value in self.headers.items()}
                body = json.loads(raw) if raw else None
                api._record(Received(self.path, headers, body))
                if self.path == "/fail":
                    self._answer(500, {"problem": "the upstream is down"})
                    return
                header, value = api._expected.get(self.path, ("", ""))
                if not header or headers.get(header) != value:
                    self._answer(401, {"problem": "credential missing or wrong"})
                    return
                customer = body.get("customer") if isinstance(body, dict) else None
                self._answer(200, {"customer": customer, "tier": "gold"})

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the tests read `received()` instead."""

        return Handler
