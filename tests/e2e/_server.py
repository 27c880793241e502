"""The real app under uvicorn in a background thread, on a fixed loopback port.

`ServerHandle.restart()` stops the host (lifespan shutdown included) and starts
a new app object on the same settings, database and port, so a client made
before the restart keeps working after it. A `RequestLog` given to the handle
notes every request the app receives, for tests about what a client sent.
"""

from __future__ import annotations

import asyncio
import io
import secrets
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import uvicorn
from fastapi import FastAPI
from openwop_client import OpenwopClient
from starlette.types import ASGIApp, Receive, Scope, Send

from _backends import Backend
from wopeval.hosting.app import host_app
from wopeval.hosting.host import Host
from wopeval.hosting.loopback import loopback_socket, quiet_server
from wopeval.settings import Settings

TENANT_A = "tenant-a"
TENANT_B = "tenant-b"
_T = TypeVar("_T")

START_DEADLINE_SECONDS = 60.0
STOP_DEADLINE_SECONDS = 60.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class RequestLog:
    """Every HTTP request the host received, as `(method, path)`, in arrival order."""

    seen: list[tuple[str, str]] = field(default_factory=list)

    def wrap(self, app: ASGIApp) -> ASGIApp:
        async def logged(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                self.seen.append((scope["method"], scope["path"]))
            await app(scope, receive, send)

        return logged


@dataclass
class _Running:
    app: FastAPI
    server: uvicorn.Server
    thread: threading.Thread
    sock: socket.socket
    errors: list[BaseException] = field(default_factory=list)
    loop: asyncio.AbstractEventLoop | None = None


class ServerHandle:
    """A started wopeval host; `keys` maps tenant → bearer key."""

    def __init__(
        self,
        settings: Settings,
        *,
        backend: str,
        app_factory: Callable[[Settings], FastAPI] = host_app,
        request_log: RequestLog | None = None,
    ) -> None:
        self.settings = settings
        self.backend = backend
        self.app_factory = app_factory
        self.request_log = request_log
        self.port = settings.port
        self.keys = dict(settings.api_keys)
        self._running: _Running | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def key_a(self) -> str:
        return self.keys[TENANT_A]

    @property
    def key_b(self) -> str:
        return self.keys[TENANT_B]

    @property
    def database_url(self) -> str:
        return self.settings.resolved_database_url()

    def client(self, tenant: str = TENANT_A) -> OpenwopClient:
        """The official client, authenticated as `tenant`."""
        return OpenwopClient(self.base_url, self.keys[tenant], timeout=60.0)

    def http(self, tenant: str | None = TENANT_A) -> httpx.Client:
        """A raw HTTP client (for what the official client cannot send); close it after use."""
        headers = {"OpenWOP-Version": "2.0"}
        if tenant is not None:
            headers["Authorization"] = f"Bearer {self.keys[tenant]}"
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=60.0, trust_env=False)

    @property
    def host(self) -> Host:
        """The running app's host, for a test that looks inside it (its store, its engine)."""
        if self._running is None:
            raise RuntimeError("the server is not running")
        host: Host = self._running.app.state.host
        return host

    def on_host_loop(self, work: Callable[[Host], Coroutine[Any, Any, _T]]) -> _T:
        """Await `work(host)` on the server's own loop, where the host's store and engine
        live, for a test that puts the host in a state no request can."""
        running = self._running
        if running is None or running.loop is None:
            raise RuntimeError("the server is not running")
        done = asyncio.run_coroutine_threadsafe(work(running.app.state.host), running.loop)
        return done.result(STOP_DEADLINE_SECONDS)

    # ── lifecycle ────────────────────────────────────────────────────

    def start(self) -> None:
        if self._running is not None:
            raise RuntimeError("the server is already running")
        fastapi_app = self.app_factory(self.settings)
        app: ASGIApp = fastapi_app
        if self.request_log is not None:
            app = self.request_log.wrap(app)
        server = quiet_server(app, graceful_seconds=10)
        sock = loopback_socket(self.port)
        errors: list[BaseException] = []

        async def serve_noting_the_loop() -> None:
            running.loop = asyncio.get_running_loop()
            await server.serve(sockets=[sock])

        def serve() -> None:
            try:
                asyncio.run(serve_noting_the_loop())
            except BaseException as exc:  # reported by start() / stop()
                errors.append(exc)

        thread = threading.Thread(target=serve, name=f"wopeval-{self.backend}", daemon=True)
        running = _Running(fastapi_app, server, thread, sock, errors)
        thread.start()
        deadline = time.monotonic() + START_DEADLINE_SECONDS
        while not server.started:
            if not running.thread.is_alive() or time.monotonic() > deadline:
                server.should_exit = True
                running.thread.join(STOP_DEADLINE_SECONDS)
                sock.close()
                raise RuntimeError(f"the wopeval host did not start: {running.errors!r}")
            time.sleep(0.01)
        self._running = running

    def stop(self) -> None:
        running, self._running = self._running, None
        if running is None:
            return
        running.server.should_exit = True
        running.thread.join(STOP_DEADLINE_SECONDS)
        running.sock.close()
        if running.thread.is_alive():
            raise RuntimeError("the wopeval host did not stop:\n" + _where_it_waits(running))
        if running.errors:
            raise RuntimeError(f"the wopeval host failed: {running.errors!r}")

    def restart(self) -> None:
        self.stop()
        self.start()


def _where_it_waits(running: _Running) -> str:
    """Every other thread's stack and the server loop's tasks' stacks, so that a host that
    hangs on stop says in what. Read from this thread while they run: a best effort."""
    frames = sys._current_frames()
    out = io.StringIO()
    for thread in threading.enumerate():
        frame = frames.get(thread.ident or 0)
        if frame is not None and thread is not threading.current_thread():
            out.write(f"thread {thread.name}:\n{''.join(traceback.format_stack(frame))}")
    if running.loop is not None:
        for task in list(asyncio.all_tasks(running.loop)):
            task.print_stack(file=out)
    return out.getvalue()


def host_settings(backend: Backend, data_dir: Path, **extra: Any) -> Settings:
    """Two tenants, a fresh database of `backend`, a free port, and `extra` settings."""
    return Settings(
        data_dir=data_dir,
        database_url=backend.new_database(),
        api_keys={
            TENANT_A: "wop_test_a_" + secrets.token_hex(16),
            TENANT_B: "wop_test_b_" + secrets.token_hex(16),
        },
        port=free_port(),
        **extra,
    )


@contextmanager
def running_host(
    settings: Settings, backend: Backend, request_log: RequestLog | None = None
) -> Iterator[ServerHandle]:
    handle = ServerHandle(settings, backend=backend.name, request_log=request_log)
    handle.start()
    try:
        yield handle
    finally:
        handle.stop()
