"""Sockets and uvicorn set-up: `wopeval serve`, and the app on loopback from a thread
(the embedded CLI host and the test hosts)."""

from __future__ import annotations

import socket

import uvicorn
from starlette.types import ASGIApp


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


def quiet_server(app: ASGIApp, *, graceful_seconds: int = 5) -> uvicorn.Server:
    """A uvicorn server for `server.run(sockets=[...])` in a thread: no access log."""
    config = uvicorn.Config(
        app,
        lifespan="on",
        loop="asyncio",
        http="h11",
        ws="none",
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=graceful_seconds,
    )
    return uvicorn.Server(config)
