"""The demo's "CRM": a loopback HTTP service the `support:crm` tool calls.

It answers `POST /crm {"customerId": ...}` with the customer's record, but only
to a request carrying `Authorization: Bearer <token>`. The host injects that
header at egress from its configuration; the agent never sees the token. It
counts the requests it served, so the demo can show that a replay reached it
zero times.
"""

from __future__ import annotations

import json
import secrets
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CUSTOMERS: dict[str, dict[str, Any]] = {
    "c-101": {"customerId": "c-101", "name": "Ada Byrne", "plan": "pro", "openTickets": 0},
    "c-102": {"customerId": "c-102", "name": "Bo Lindqvist", "plan": "free", "openTickets": 1},
    "c-103": {
        "customerId": "c-103",
        "name": "Chidi Okafor",
        "plan": "enterprise",
        "openTickets": 2,
    },
    "c-104": {"customerId": "c-104", "name": "Dana Kowalczyk", "plan": "pro", "openTickets": 4},
    "c-105": {"customerId": "c-105", "name": "Emil Sato", "plan": "free", "openTickets": 0},
}


class CrmService:
    """`with CrmService() as crm:` serves on `crm.url` until the block ends."""

    def __init__(self) -> None:
        self.token = "crm_" + secrets.token_urlsafe(24)
        self.requests_served = 0
        self._lock = threading.Lock()
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                service._handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                """Silent: the demo prints its own story."""

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="demo-crm", daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/crm"

    def __enter__(self) -> CrmService:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        if request.path != "/crm":
            self._reply(request, HTTPStatus.NOT_FOUND, {"error": "not_found"})
            return
        # The credential check is the point: only the host's egress adds this header.
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            self._reply(request, HTTPStatus.UNAUTHORIZED, {"error": "unauthenticated"})
            return
        length = int(request.headers.get("Content-Length") or 0)
        try:
            body = json.loads(request.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self._reply(request, HTTPStatus.BAD_REQUEST, {"error": "not_json"})
            return
        customer = CUSTOMERS.get(str(body.get("customerId"))) if isinstance(body, dict) else None
        with self._lock:
            self.requests_served += 1
        if customer is None:
            self._reply(request, HTTPStatus.NOT_FOUND, {"error": "no_such_customer"})
            return
        self._reply(request, HTTPStatus.OK, customer)

    @staticmethod
    def _reply(request: BaseHTTPRequestHandler, status: HTTPStatus, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        request.send_response(status)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)
