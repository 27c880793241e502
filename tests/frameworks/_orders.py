"""The examples' orders MCP server over Streamable HTTP, in a thread, counting what it hears.

It is `examples/mcp-tools/orders_server.py` itself (its `server`, as
`--http PORT` serves it), wrapped in an ASGI counter of every HTTP request it
receives: a replay that lists, calls or merely opens a session moves it.
"""

from __future__ import annotations

import importlib.util
import threading
import time
from pathlib import Path
from types import ModuleType

from starlette.types import ASGIApp, Receive, Scope, Send

from wopeval.hosting.loopback import loopback_socket, quiet_server

ORDERS_SERVER = Path(__file__).parents[2] / "examples" / "mcp-tools" / "orders_server.py"
START_DEADLINE_SECONDS = 30.0


def _orders_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("wopeval_tier_orders_server", ORDERS_SERVER)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Counter:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.requests = 0
        self._lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            with self._lock:
                self.requests += 1
        await self.app(scope, receive, send)


class CountingOrdersServer:
    """`url` for `[[mcp_servers]]`; `requests` is every HTTP request received so far."""

    def __init__(self) -> None:
        app = _orders_module().server.streamable_http_app(stateless_http=True)
        self._counter = _Counter(app)
        self._socket = loopback_socket()
        self._server = quiet_server(self._counter)
        self._thread = threading.Thread(
            target=lambda: self._server.run(sockets=[self._socket]),
            name="orders-mcp-server",
            daemon=True,
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._socket.getsockname()[1]}/mcp"

    @property
    def requests(self) -> int:
        return self._counter.requests

    def start(self) -> None:
        self._thread.start()
        deadline = time.monotonic() + START_DEADLINE_SECONDS
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the orders MCP server did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(START_DEADLINE_SECONDS)
        self._socket.close()
