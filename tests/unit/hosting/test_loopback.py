"""The loopback server stops when asked (hosting/loopback.py): `exit()` wakes its main loop
instead of waiting for the next tick, its shutdown closes idle connections and goes straight
to the app's lifespan shutdown, and a request in flight still gets its answer through
uvicorn's own graceful shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import uvicorn
from starlette.types import Receive, Scope, Send

from wopeval.hosting.loopback import LoopbackServer, loopback_socket, quiet_server

DEADLINE_SECONDS = 30.0


class _App:
    """Records its lifespan; `/slow` answers once `release` is set."""

    def __init__(self) -> None:
        self.lifespan: list[str] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while "shutdown" not in self.lifespan:
                kind = (await receive())["type"].removeprefix("lifespan.")
                self.lifespan.append(kind)
                await send({"type": f"lifespan.{kind}.complete"})
            return
        if scope["path"] == "/slow":
            self.entered.set()
            await asyncio.to_thread(self.release.wait, DEADLINE_SECONDS)
        headers = [(b"content-length", b"2")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"ok"})


@contextlib.contextmanager
def _serving(app: _App) -> Iterator[tuple[LoopbackServer, str, threading.Thread]]:
    sock = loopback_socket()
    server = quiet_server(app)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + DEADLINE_SECONDS
    while not server.started:
        assert thread.is_alive(), "the server did not start"
        assert time.monotonic() < deadline, "the server did not start in time"
        time.sleep(0.01)
    try:
        yield server, f"http://127.0.0.1:{sock.getsockname()[1]}", thread
    finally:
        server.exit()
        thread.join(DEADLINE_SECONDS)
        sock.close()


@pytest.fixture
def uvicorn_shutdowns(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times uvicorn's own (graceful, sleeping) shutdown ran."""
    calls: list[int] = []
    graceful = uvicorn.Server.shutdown

    async def counted(self: uvicorn.Server, sockets: object = None) -> None:
        calls.append(len(self.server_state.connections))
        await graceful(self, sockets)  # type: ignore[arg-type]

    monkeypatch.setattr(uvicorn.Server, "shutdown", counted)
    return calls


def test_exit_wakes_the_server_and_an_idle_one_stops_without_uvicorns_wait(
    monkeypatch: pytest.MonkeyPatch, uvicorn_shutdowns: list[int]
) -> None:
    # A tick longer than the test: only `exit()` waking the main loop can stop it in time.
    monkeypatch.setattr(LoopbackServer, "TICK_SECONDS", 3600.0)
    app = _App()
    with _serving(app) as (server, url, thread), httpx.Client(base_url=url) as kept:
        assert kept.get("/").text == "ok"  # its connection stays open, idle
        server.exit()
        thread.join(DEADLINE_SECONDS)
        assert not thread.is_alive(), "exit() did not stop the server"
        with pytest.raises(httpx.TransportError):
            kept.get("/")  # the idle connection was closed, and nothing listens
    assert app.lifespan == ["startup", "shutdown"]
    assert uvicorn_shutdowns == []


def test_a_request_in_flight_gets_its_answer_before_the_server_stops(
    uvicorn_shutdowns: list[int],
) -> None:
    app = _App()
    answers: list[httpx.Response] = []
    with _serving(app) as (server, url, thread):

        def ask() -> None:
            answers.append(httpx.get(f"{url}/slow", timeout=DEADLINE_SECONDS))

        asking = threading.Thread(target=ask)
        asking.start()
        assert app.entered.wait(DEADLINE_SECONDS)
        server.exit()
        deadline = time.monotonic() + DEADLINE_SECONDS
        while not uvicorn_shutdowns:  # the request is still busy when the shutdown looks
            assert time.monotonic() < deadline, "uvicorn's graceful shutdown did not run"
            time.sleep(0.01)
        app.release.set()
        asking.join(DEADLINE_SECONDS)
        thread.join(DEADLINE_SECONDS)
        assert not thread.is_alive()
    assert [(answer.status_code, answer.text) for answer in answers] == [(200, "ok")]
    assert app.lifespan == ["startup", "shutdown"]
    assert uvicorn_shutdowns == [1]  # the busy connection: uvicorn's graceful shutdown
