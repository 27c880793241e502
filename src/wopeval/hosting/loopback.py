"""Sockets and uvicorn set-up: `wopeval serve`, and the app on loopback from a thread
(the embedded CLI host and the test hosts)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from typing import Literal

import uvicorn
from starlette.types import ASGIApp

HTTP_PROTOCOL = "h11"
"""uvicorn's HTTP protocol for every server of the host, whatever else is importable.

Left to choose (`auto`), uvicorn takes httptools whenever it is installed (`uvicorn[standard]`
and many agent stacks bring it), and its protocol frames a stream to an HTTP/1.0 client (nginx
proxies with HTTP/1.0 unless told otherwise) as chunked, which that client cannot read: a
run's event stream and a proxied model stream arrive with chunk sizes in them
(tests/cli/test_http10_stream.py). h11 ends such a stream with the connection. Measured
beside it on the model proxy, httptools gave no gain to take that risk for (bench/README.md)."""


def served_config(
    app: ASGIApp,
    *,
    log_level: str,
    access_log: bool = True,
    lifespan: Literal["auto", "on", "off"] = "auto",
    backlog: int = 2048,
) -> uvicorn.Config:
    """uvicorn's configuration for a host's or a worker's server listening for others."""
    return uvicorn.Config(
        app,
        http=HTTP_PROTOCOL,
        log_level=log_level,
        access_log=access_log,
        lifespan=lifespan,
        backlog=backlog,
    )


def loopback_socket(port: int = 0) -> socket.socket:
    """A socket bound to 127.0.0.1 (port 0: the kernel picks a free one, with no race)."""
    return bound_socket("127.0.0.1", port)


def bound_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to `host` (an IPv6 literal binds IPv6) and `port`.

    The protocol must be IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY on accepted
    connections only when the listening socket says TCP, and without it every
    response on a kept-alive connection waits ~40 ms for Nagle's algorithm.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


class LoopbackServer(uvicorn.Server):
    """uvicorn that stops when asked, not at its next tick.

    uvicorn reads `should_exit` every 0.1 s, and its shutdown then waits 0.1 s more for
    the open connections to finish: an embedded host's command paid ~0.15 s for them at
    its end (issue 28). `exit()` wakes the main loop at once, and a shutdown closes the
    idle connections itself: with none left busy it goes straight to the lifespan's
    shutdown, otherwise uvicorn's own graceful shutdown runs.
    """

    TICK_SECONDS = 0.1
    """uvicorn's tick: how often the main loop updates its date header (and looks at
    `should_exit` when set by other means than `exit()`)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._wake: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None
        self.ready = threading.Event()
        """Set once it serves: a thread starting it waits on this, not by polling `started`."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self.ready.set()

    def exit(self) -> None:
        """Stop serving, from any thread."""
        self.should_exit = True
        if self._wake is not None:
            loop, event = self._wake
            with contextlib.suppress(RuntimeError):  # its loop has closed: it stopped already
                loop.call_soon_threadsafe(event.set)

    async def main_loop(self) -> None:
        event = asyncio.Event()
        self._wake = (asyncio.get_running_loop(), event)  # before the first look at should_exit
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 1) % 864_000  # uvicorn's own count: its date header each second
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.TICK_SECONDS):
                    await event.wait()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()  # no new connection from here on
        for connection in list(self.server_state.connections):
            connection.shutdown()  # an idle one closes now, a busy one after its response
        await asyncio.sleep(0)  # the closed ones' `connection_lost` runs
        if self.server_state.connections or self.server_state.tasks or self.force_exit:
            await super().shutdown(sockets)
            return
        for sock in sockets or []:
            sock.close()
        await self.lifespan.shutdown()


def quiet_server(app: ASGIApp, *, graceful_seconds: int = 5) -> LoopbackServer:
    """A uvicorn server for `server.run(sockets=[...])` in a thread: no access log."""
    config = uvicorn.Config(
        app,
        lifespan="on",
        loop="asyncio",
        http=HTTP_PROTOCOL,
        ws="none",
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=graceful_seconds,
    )
    return LoopbackServer(config)
