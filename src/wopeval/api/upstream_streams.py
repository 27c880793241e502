"""The model proxy's upstream sockets on the event loop's own transports: the network
backend httpcore's connections use in the host's upstream pools (api/upstream_pools.py).

httpcore's default backend on asyncio is anyio's: each read and each write enters a cancel
scope for its time limit (`anyio.fail_after`: the current task, the task's scope state and
sniffio's library check each time), and each read takes the socket off the loop's reader
and puts it back. Under a whole exchange that was ~10 % of the host's CPU (py-spy, issue 29,
bench/README.md's proxy-whole section), for four reads and writes. Here a connection is an
`asyncio.Protocol` on the loop's transport: what arrives is kept in a buffer (reading pauses
past `_HELD_BYTES` held, resumes once read), a read that must wait has one timer for its
time limit, a write waits only while the transport holds too much unsent. An idle
connection is taken for a request only if nothing has arrived on it, its socket asked as
httpcore's backends ask it. TLS is the loop's `start_tls`, as anyio's is; the environment's
proxy is still httpcore's (a CONNECT tunnel's TLS is started on this stream). Only
httpcore's public backend interface is used.
"""

from __future__ import annotations

import asyncio
import select
import ssl
from collections.abc import Iterable
from typing import Any, cast

import httpcore

_HELD_BYTES = 256 * 1024
"""Unread bytes held before the socket's reading pauses (asyncio's streams keep 64 KiB)."""


class _Received(asyncio.Protocol):
    """One connection's side of the loop: the bytes received and not yet read, whether the
    peer has ended, and the one read or write waiting."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.held = bytearray()
        self.ended = False
        """The peer has ended, or the connection is lost."""
        self.closed = False
        self.error: Exception | None = None
        """Why the connection was lost, unless it ended cleanly."""
        self.paused_reading = False
        self.paused_writing = False
        self.waiter: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not one by class

    def data_received(self, data: bytes) -> None:
        self.held += data
        if len(self.held) > _HELD_BYTES and self.transport is not None:
            self.paused_reading = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.ended = True
        self._wake()
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = self.closed = True
        self.error = exc
        self._wake()

    def pause_writing(self) -> None:
        self.paused_writing = True

    def resume_writing(self) -> None:
        self.paused_writing = False
        self._wake()

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)


class LoopStream(httpcore.AsyncNetworkStream):
    """One upstream connection, as httpcore's HTTP/1.1 connection reads and writes it."""

    def __init__(self, transport: asyncio.Transport, received: _Received) -> None:
        self._transport = transport
        self._received = received

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        received = self._received
        if not received.held and not received.ended:
            await self._wait(timeout, httpcore.ReadTimeout)
        held = received.held
        if held:
            if len(held) <= max_bytes:
                data = bytes(held)
                held.clear()
            else:
                data = bytes(held[:max_bytes])
                del held[:max_bytes]
            if received.paused_reading and len(held) <= _HELD_BYTES:
                received.paused_reading = False
                self._transport.resume_reading()
            return data
        if received.error is not None:
            raise httpcore.ReadError(str(received.error)) from received.error
        return b""  # the peer's end, as httpcore reads it

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        received = self._received
        if received.closed or self._transport.is_closing():
            raise httpcore.WriteError("the connection was closed")
        self._transport.write(buffer)
        while received.paused_writing and not received.closed:
            await self._wait(timeout, httpcore.WriteTimeout)
        if received.closed:
            raise httpcore.WriteError(f"the connection was lost: {received.error}")

    async def _wait(self, timeout: float | None, expired: type[httpcore.TimeoutException]) -> None:
        """Until the connection has news (data, its end, room to write), or `timeout`."""
        loop = asyncio.get_running_loop()
        waiter = self._received.waiter = loop.create_future()
        timer = None if timeout is None else loop.call_later(timeout, _expire, waiter)
        try:
            await waiter
        except TimeoutError as exc:
            raise expired(f"no progress in {timeout} s") from exc
        finally:
            self._received.waiter = None
            if timer is not None:
                timer.cancel()

    async def aclose(self) -> None:
        # Not waited for: a TLS close waits for the peer's answer (up to 30 s), and a closed
        # connection has nothing left to give the pool.
        self._transport.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            transport = await loop.start_tls(
                self._transport,
                self._received,
                ssl_context,
                server_hostname=server_hostname,
                ssl_handshake_timeout=timeout,
            )
        except TimeoutError as exc:
            self._transport.close()
            raise httpcore.ConnectTimeout(str(exc)) from exc
        except (OSError, ssl.SSLError) as exc:
            self._transport.close()
            raise httpcore.ConnectError(str(exc)) from exc
        assert transport is not None  # a client's TLS always yields one
        # The loop's TLS does not tell the protocol its new transport (no `connection_made`):
        # past `_HELD_BYTES` unread it paused the TCP transport under the TLS one, which the
        # reads, resuming the TLS one, never resumed, and the answer stalled until its read
        # timed out. Paused and resumed now is the TLS transport (its layer pauses the TCP one).
        self._received.transport = transport
        return LoopStream(transport, self._received)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            # Asked of an idle connection: anything received, or the peer's end, means the
            # server has closed it (or will: an unasked-for answer such as a 408). The socket
            # is asked too, as httpcore's own backends ask it: a busy loop may not have read
            # what has arrived yet.
            received = self._received
            return bool(received.held) or received.ended or _readable(self._transport)
        names = {
            "ssl_object": "ssl_object",
            "client_addr": "sockname",
            "server_addr": "peername",
            "socket": "socket",
        }
        return self._transport.get_extra_info(names[info]) if info in names else None


def _readable(transport: asyncio.Transport) -> bool:
    sock = transport.get_extra_info("socket")
    if sock is None:
        return True  # no socket left: closed
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    return bool(poller.poll(0))


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


class LoopBackend(httpcore.AsyncNetworkBackend):
    """Connections on the running event loop's transports (`LoopStream`)."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        local = None if local_address is None else (local_address, 0)
        try:
            async with asyncio.timeout(timeout):
                transport, received = await loop.create_connection(
                    _Received, host, port, local_addr=local
                )
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(f"no connection in {timeout} s") from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        for option in socket_options or ():
            transport.get_extra_info("socket").setsockopt(*option)
        # No isinstance check: uvloop's transports (the loop `wopeval serve` runs on when
        # uvloop is installed) are transports in all but their class.
        return LoopStream(transport, received)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.UnsupportedProtocol("a model upstream is reached over TCP")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
