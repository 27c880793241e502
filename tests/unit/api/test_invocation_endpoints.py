"""An invocation's two endpoints, in process: its MCP endpoint and its recording model proxy.

The routers are mounted on an app of their own (as the queue worker mounts
them) and asked through ASGI, for one real invocation on a SQLite store; the
model upstream is the loopback stand-in of the providers (`_model_server`),
or a loopback server that answers what no provider would. Both endpoints
resolve the token one way; past it, the MCP endpoint hands each call to the
invocation's boundary and the proxy forwards, replays or refuses each request
in its API's shape, recording what it did.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from pydantic import JsonValue
from sqlalchemy import select
from starlette.types import Message, Receive, Scope, Send

from _model_server import ModelServer as ModelStandIn
from wopeval import evals, models
from wopeval.agents import AgentRegistry, AgentSpec, PythonAgent
from wopeval.api import access_log
from wopeval.api import errors as error_handlers
from wopeval.api.app import answered_below_the_router
from wopeval.api.auth import Authenticator, hash_key
from wopeval.api.deps import InvocationAccess
from wopeval.api.request_guard import RequestGuard
from wopeval.api.routes import mcp, model_proxy
from wopeval.api.upstream_pools import UpstreamPools
from wopeval.engine.recording.boundary import Boundary, LiveTransport
from wopeval.engine.recording.grants import InvocationGrants
from wopeval.engine.recording.invocation import Invocation, Where
from wopeval.engine.recording.models import ModelRecorder, ModelServer
from wopeval.engine.runlog.runlog import Journal
from wopeval.hosting.loopback import loopback_socket, quiet_server
from wopeval.models import Endpoint, ModelUpstream
from wopeval.store import Store
from wopeval.store.tables import model_calls, tool_calls
from wopeval.tools import PythonTool, ToolContext, ToolFailure, ToolListing, ToolRegistry
from wopeval.wire import limits
from wopeval.wire.runs import RunStatus

from .._counted_server import CountedConnections, read_body, serving
from ..engine._store import TENANT, open_run, open_store, writer_for

KEY = "key-of-the-tenant"
OTHER_KEY = "key-of-another-tenant"
UPSTREAM_KEY = "sk-upstream-" + "u" * 20
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
CHAT_BODY: dict[str, JsonValue] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


async def _decide(context: object) -> JsonValue:
    return None


async def _granted(args: JsonValue) -> JsonValue:
    return {"granted": args}


async def _words(args: JsonValue) -> JsonValue:
    return "just words"


async def _listed(args: JsonValue) -> JsonValue:
    return [1, 2]


async def _fails(args: JsonValue) -> JsonValue:
    raise ToolFailure("quota", "no more today (für heute)", details={"left": 0})


async def _server_answer(args: JsonValue) -> JsonValue:
    return {"content": [{"type": "text", "text": "from the server"}], "structuredContent": {"a": 1}}


async def _server_text(args: JsonValue) -> JsonValue:
    return "bare"


async def _server_refuses(args: JsonValue) -> JsonValue:
    content = {"content": [{"type": "text", "text": "the server says no"}]}
    raise ToolFailure("mcp_tool_error", "the server says no", details=content)


def _registry() -> ToolRegistry:
    registry = ToolRegistry()
    registry.add(PythonTool("t:granted", _granted), ToolListing("Grants.", {"type": "object"}))
    registry.add(PythonTool("t:words", _words))
    registry.add(PythonTool("t:list", _listed))
    registry.add(PythonTool("t:fails", _fails))
    registry.add(PythonTool("t:secret", _granted))
    # Tools an MCP server lists: their answers are kept as the server gave them.
    for name, function in (
        ("srv:answer", _server_answer),
        ("srv:text", _server_text),
        ("srv:refuses", _server_refuses),
    ):
        registry.add(PythonTool(name, function), ToolListing(server="srv"))
    return registry


@dataclass
class Endpoints:
    app: FastAPI
    client: httpx.AsyncClient
    invocation: Invocation
    token: str
    store: Store
    run_id: str

    @property
    def mcp(self) -> str:
        return f"/host/wopeval/mcp/{self.token}"

    def proxy(self, path: str) -> str:
        return f"/host/wopeval/openai/{self.token}/v1{path}"

    @property
    def messages(self) -> str:
        return f"/host/wopeval/anthropic/{self.token}/v1/messages"

    async def call(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
        answer = await self.rpc("tools/call", params)
        result: dict[str, Any] = answer.json()["result"]
        return result

    async def rpc(
        self, method: str, params: dict[str, Any], headers: dict[str, str] | None = None
    ) -> httpx.Response:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        sent = {**MCP_HEADERS, **(headers or {})}
        return await self.client.post(self.mcp, json=body, headers=sent)

    async def recorded(self, table: Any, *columns: str) -> list[tuple[Any, ...]]:
        await self.invocation.journal.flush()
        async with self.store.reading() as uow:
            rows = await uow.connection.execute(
                select(*(table.c[name] for name in columns)).where(table.c.run_id == self.run_id)
            )
            return [tuple(row) for row in rows]


@asynccontextmanager
async def endpoints(
    tmp_path: Path,
    upstream: ModelUpstream | None = None,
    replay: ModelServer | None = None,
    status: RunStatus = RunStatus.RUNNING,
    *,
    guarded: bool = False,
) -> AsyncIterator[Endpoints]:
    """The endpoints on an app of their routes; `guarded`: inside the request guard (the
    host's and a queue worker's), which hands the proxy's layer the body it parsed (else the
    layer reads and parses it, as it does a body that is not JSON by its type)."""
    async with open_store(tmp_path) as store, aclosing(UpstreamPools()) as upstreams:
        log = await open_run(writer_for(store), status)
        grants: InvocationGrants[Invocation] = InvocationGrants("http://host")
        live = LiveTransport(_registry(), ToolContext(TENANT, log.run_id), 5.0)
        spec = AgentSpec(
            "agent",
            PythonAgent(_decide),
            "python",
            tools=("t:granted", "t:words", "t:list", "t:fails", "srv:*"),
            model_upstream=upstream,
        )
        invocation = Invocation(
            spec=spec,
            input=None,
            journal=Journal(log),
            boundary=Boundary(live, models=replay),
            agents=AgentRegistry(),
            where=Where(log.run_id),
            grants=grants,
        )
        app = FastAPI()
        app.include_router(mcp.router)
        app.include_router(model_proxy.router)
        error_handlers.install(app)
        # The proxy's routes and the MCP endpoint's POSTs answered by their layers, as the
        # host and a worker answer them.
        app.add_middleware(model_proxy.ProxyExchanges)
        app.add_middleware(mcp.McpExchanges)
        if guarded:
            app.add_middleware(
                RequestGuard,
                max_body_bytes=limits.DEFAULT_MAX_BODY_BYTES,
                router=app.router,
                routed=answered_below_the_router,
            )
        sessions = mcp.McpSessions()
        keys = [(hash_key(KEY), "k1", TENANT), (hash_key(OTHER_KEY), "k2", "other-tenant")]
        app.state.invocation_access = InvocationAccess(grants, Authenticator(keys), upstreams)
        app.state.mcp_sessions = sessions
        async with (
            sessions.run(),
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://host"
            ) as client,
        ):
            yield Endpoints(app, client, invocation, invocation.openai_api_key, store, log.run_id)


@asynccontextmanager
async def on_loopback(at: Endpoints) -> AsyncIterator[str]:
    """The endpoints' app served by uvicorn on loopback, as the host serves it; its base URL."""
    socket = loopback_socket()
    server = quiet_server(at.app)
    serving = asyncio.create_task(server.serve(sockets=[socket]))
    try:
        await asyncio.to_thread(server.ready.wait, 30)
        yield f"http://127.0.0.1:{socket.getsockname()[1]}"
    finally:
        server.exit()
        await serving


@asynccontextmanager
async def agent_on_loopback(
    tmp_path: Path, upstream: ModelUpstream
) -> AsyncIterator[tuple[Endpoints, httpx.AsyncClient]]:
    """The endpoints with `upstream`, served on loopback (`on_loopback`), and an agent's HTTP
    client to them."""
    async with (
        endpoints(tmp_path, upstream) as at,
        on_loopback(at) as base,
        httpx.AsyncClient(base_url=base, trust_env=False) as agent,
    ):
        yield at, agent


# ── the MCP endpoint ─────────────────────────────────────────────────


async def test_the_mcp_endpoint_lists_the_granted_tools_by_their_offered_names(
    tmp_path: Path,
) -> None:
    async with endpoints(tmp_path) as at:
        listed = (await at.rpc("tools/list", {})).json()["result"]["tools"]
    assert [tool["name"] for tool in listed] == [
        "srv__answer", "srv__refuses", "srv__text", "t__fails", "t__granted", "t__list", "t__words"
    ]  # fmt: skip
    granted = next(tool for tool in listed if tool["name"] == "t__granted")
    assert (granted["description"], granted["inputSchema"]) == ("Grants.", {"type": "object"})
    assert "description" not in next(tool for tool in listed if tool["name"] == "t__words")


async def test_a_call_answers_with_the_value_as_text_and_structured_when_an_object(
    tmp_path: Path,
) -> None:
    async with endpoints(tmp_path) as at:
        granted = await at.call("t__granted", {"n": "ü"})
        words = await at.call("t__words")
        listed = await at.call("t__list")
        server = await at.call("srv__answer")
        bare = await at.call("srv__text")
        calls = await at.recorded(tool_calls, "tool", "status")
    assert granted == {
        "content": [{"type": "text", "text": '{"granted": {"n": "ü"}}'}],
        "structuredContent": {"granted": {"n": "ü"}},
        "isError": False,
    }
    assert words == {"content": [{"type": "text", "text": "just words"}], "isError": False}
    assert listed == {"content": [{"type": "text", "text": "[1, 2]"}], "isError": False}
    assert server == {
        "content": [{"type": "text", "text": "from the server"}],
        "structuredContent": {"a": 1},
        "isError": False,
    }
    assert bare == {"content": [{"type": "text", "text": "bare"}], "isError": False}
    assert calls == [
        ("t:granted", "ok"), ("t:words", "ok"), ("t:list", "ok"), ("srv:answer", "ok"),
        ("srv:text", "ok"),
    ]  # fmt: skip


async def test_a_failed_call_is_an_is_error_result_and_an_un_granted_one_runs_nothing(
    tmp_path: Path,
) -> None:
    async with endpoints(tmp_path) as at:
        failed = await at.call("t__fails", {"ñ": "ü"})
        refused_by_server = await at.call("srv__refuses")
        not_granted = await at.call("t__secret")
        calls = await at.recorded(tool_calls, "tool", "status")
    (text,) = [block["text"] for block in failed["content"]]
    assert failed["isError"] is True
    assert json.loads(text) == {
        "code": "quota",
        "message": "no more today (für heute)",
        "details": {"left": 0},
    }
    assert "für" in text, "as written, not escaped"
    assert refused_by_server == {
        "content": [{"type": "text", "text": "the server says no"}],
        "isError": True,
    }
    (refusal,) = [block["text"] for block in not_granted["content"]]
    assert not_granted["isError"] is True
    assert json.loads(refusal) == {
        "code": "tool_not_offered",
        "message": "t__secret is not offered to agent agent",
    }
    assert calls == [("t:fails", "error"), ("srv:refuses", "error")]


async def test_a_call_the_run_ended_under_is_a_plain_tool_error(tmp_path: Path) -> None:
    async with endpoints(tmp_path, status=RunStatus.CANCELLED) as at:
        ended = await at.call("t__granted", {"n": 1})
    (text,) = [block["text"] for block in ended["content"]]
    assert ended["isError"] is True
    assert text == json.dumps({"code": "invocation_ended", "message": "the invocation has ended"})


async def test_the_mcp_endpoint_refuses_every_other_caller_with_one_404(tmp_path: Path) -> None:
    async with endpoints(tmp_path) as at:
        passing = [{}, {"Authorization": f"Bearer {at.token}"}, {"Authorization": f"Bearer {KEY}"}]
        statuses = [(await at.rpc("tools/list", {}, h)).status_code for h in passing]
        refusing = [
            {"Authorization": f"Bearer {OTHER_KEY}"},
            {"x-api-key": OTHER_KEY},
            {"Authorization": "Bearer no-such-key"},
        ]
        refused = [await at.rpc("tools/list", {}, h) for h in refusing]
        unknown = await at.client.post(
            "/host/wopeval/mcp/" + "x" * len(at.token), json={}, headers=MCP_HEADERS
        )
    assert statuses == [200, 200, 200]
    for answer in [*refused, unknown]:
        assert answer.status_code == 404
        assert answer.json() == {"error": "not_found", "message": "No such MCP endpoint."}


# ── the model proxy ─────────────────────────────────────────────────


@pytest.fixture(scope="module")
def stand_in() -> Iterator[ModelStandIn]:
    with ModelStandIn() as server:
        yield server


def _upstream(openai: str, anthropic: str, timeout: float = 10.0) -> ModelUpstream:
    return ModelUpstream(
        {
            "openai": Endpoint(openai, lambda: UPSTREAM_KEY),
            "anthropic": Endpoint(anthropic, lambda: UPSTREAM_KEY),
        },
        timeout,
    )


def _stand_in_upstream(server: ModelStandIn) -> ModelUpstream:
    return _upstream(server.base_url, server.root_url)


class Odd:
    """An upstream that answers 200 with what no provider sends (`{}`, or plain text when
    streamed), or, at `/slow`, answers after two seconds."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path.startswith("/slow"):
                    time.sleep(2)
                data = b"not an event stream\n" if body.get("stream") else b"{}"
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture(scope="module")
def odd() -> Iterator[Odd]:
    server = Odd()
    yield server
    server.server.shutdown()
    server.server.server_close()


def _script(server: ModelStandIn, user: str, turns: list[dict[str, Any]]) -> dict[str, JsonValue]:
    server.script.add(user, turns)
    return {"model": "m", "messages": [{"role": "user", "content": user}]}


@pytest.mark.parametrize("guarded", [False, True], ids=["read-here", "guard-parsed"])
async def test_a_request_is_forwarded_with_the_real_key_relayed_and_recorded(
    tmp_path: Path, stand_in: ModelStandIn, guarded: bool
) -> None:
    whole = _script(stand_in, f"whole please {guarded}", [{"content": "whole answer"}])
    streamed = _script(stand_in, f"stream please {guarded}", [{"content": "streamed answer"}])
    async with endpoints(tmp_path, _stand_in_upstream(stand_in), guarded=guarded) as at:
        answer = await at.client.post(at.proxy("/chat/completions"), json=whole)
        stream = await at.client.post(
            at.proxy("/chat/completions"), json={**streamed, "stream": True}
        )
        rows = await at.recorded(model_calls, "api", "via", "served_by", "status", "stream")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/json"
    assert answer.json()["choices"][0]["message"]["content"] == "whole answer"
    assert stream.status_code == 200
    assert stream.headers["content-type"].startswith("text/event-stream")
    assert stream.headers["x-accel-buffering"] == "no"
    assert _content(stream) == "streamed answer"
    assert stream.text.endswith("data: [DONE]\n\n")
    assert rows == [("chat", "proxy", "live", "ok", False), ("chat", "proxy", "live", "ok", True)]
    (sent,) = stand_in.script.requests_with(f"whole please {guarded}")
    assert sent.authorization == f"Bearer {UPSTREAM_KEY}"
    assert sent.body == whole


_FIRST = b'data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n'
_REST = (
    b'data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"lo"},'
    b'"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
)


class Trickle:
    """An upstream that streams a chat answer's first event, then holds the rest until the
    agent has it (`relayed`), or until 5 s have passed."""

    def __init__(self) -> None:
        self.relayed = asyncio.Event()
        self.held_until_relayed: bool | None = None

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1]) for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )  # fmt: skip
        await reader.readexactly(length)
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n" + _chunk(_FIRST)
        )
        await writer.drain()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.relayed.wait(), 5)
        self.held_until_relayed = self.relayed.is_set()
        writer.write(_chunk(_REST) + b"0\r\n\r\n")
        await writer.drain()
        writer.close()


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%b\r\n" % (len(data), data)


async def test_each_streamed_chunk_reaches_the_agent_as_it_comes_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chunk goes on to the agent while the upstream still holds the rest of its stream,
    and before the host reads it for the record (the agent waits for no parsing)."""
    trickle = Trickle()
    server = await asyncio.start_server(trickle.serve, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    relayed = bytearray()
    read_after_relayed: list[bool] = []
    assembler = models.CHAT.assembler

    class Watched:
        """The chat assembler, noting whether each line it reads had reached the agent."""

        def __init__(self) -> None:
            self.real = assembler()
            self.complete = False

        def feed(self, line: str) -> None:
            read_after_relayed.append(line.encode() in relayed)
            self.real.feed(line)
            self.complete = self.real.complete

        def answer(self) -> models.ModelAnswer:
            return self.real.answer()

    monkeypatch.setattr(models.CHAT, "assembler", Watched)

    async def send(message: Message) -> None:
        if message["type"] == "http.response.body" and message.get("body"):
            relayed.extend(message["body"])
            trickle.relayed.set()

    try:
        async with endpoints(tmp_path, _upstream(url + "/v1", url)) as at:
            body = json.dumps({**CHAT_BODY, "stream": True}).encode()
            await at.app(_post_scope(at.proxy("/chat/completions"), body), _sent(body), send)
            rows = await at.recorded(model_calls, "status", "response")
    finally:
        server.close()
    assert trickle.held_until_relayed, "the first chunk waited for the stream's end"
    assert bytes(relayed) == _FIRST + _REST
    assert len(read_after_relayed) > 1
    assert all(read_after_relayed), read_after_relayed
    assert [(status, response["content"]) for status, response in rows] == [("ok", "Hello")]


def _post_scope(path: str, body: bytes) -> Scope:
    headers = [(b"host", b"host"), (b"content-type", b"application/json")]
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [*headers, (b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 1),
        "server": ("host", 80),
    }


def _sent(body: bytes) -> Receive:
    """The request's body, then nothing more: the agent stays connected."""
    messages: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> Message:
        if messages:
            return messages.pop()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    return receive


class Answers(CountedConnections):
    """Counts its connections and answers each request with the next of `answers` (a status
    and a body), all on the connection they came on."""

    def __init__(self, *answers: tuple[int, bytes]) -> None:
        super().__init__()
        self.answers = list(answers)

    async def answer(
        self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        length = next(
            int(line.split(b":")[1]) for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )  # fmt: skip
        await reader.readexactly(length)
        status, body = self.answers.pop(0)
        writer.write(b"HTTP/1.1 %d X\r\nContent-Length: %d\r\n\r\n%b" % (status, len(body), body))
        await writer.drain()


_CHAT_ANSWER = json.dumps(
    {"id": "c1", "model": "m", "choices": [{"index": 0, "message": {"content": "hi"}}]}
).encode()
_UPSTREAM_ERROR = b'{"error": {"type": "invalid_request_error"}}'


async def test_a_whole_answers_upstream_connection_goes_back_once_it_is_written_and_is_kept(
    tmp_path: Path,
) -> None:
    """Relayed, an upstream's error, the proxy's own 502 for what is no answer, a stream's
    upstream error: each answer's connection is handed back after the answer is written (not
    before: off the exchange's way, issue 29) and serves the next exchange."""
    server = Answers((200, _CHAT_ANSWER), (400, _UPSTREAM_ERROR), (200, b"{}"), (400, b"{}"))
    async with serving(server) as port:
        url = f"http://127.0.0.1:{port}"
        async with endpoints(tmp_path, _upstream(url, url)) as at:
            statuses = []
            for stream in (False, False, False, True):
                answered = await at.client.post(
                    at.proxy("/chat/completions"), json={**CHAT_BODY, "stream": stream}
                )
                statuses.append(answered.status_code)
            rows = await at.recorded(model_calls, "status")
    assert statuses == [200, 400, 502, 400]
    assert rows == [("ok",), ("error",), ("error",), ("error",)]
    assert server.opened == 1, "an answer's connection was not handed back"


async def test_a_whole_answers_upstream_connection_goes_back_when_its_write_or_record_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = Answers(*[(200, _CHAT_ANSWER)] * 3)
    body = json.dumps(CHAT_BODY).encode()

    async def gone(message: Message) -> None:
        raise OSError("the agent went away")

    async def kept(message: Message) -> None:
        pass

    record = ModelRecorder.record

    def failing(*args: Any, **kwargs: Any) -> None:
        monkeypatch.setattr(ModelRecorder, "record", record)
        raise RuntimeError("the journal refused")

    async with serving(server) as port:
        url = f"http://127.0.0.1:{port}"
        async with endpoints(tmp_path, _upstream(url, url)) as at:
            path = at.proxy("/chat/completions")
            with pytest.raises(OSError, match="went away"):
                await at.app(_post_scope(path, body), _sent(body), gone)
            monkeypatch.setattr(ModelRecorder, "record", failing)
            with pytest.raises(RuntimeError):  # the host's crash guard's 500, here Starlette's
                await at.app(_post_scope(path, body), _sent(body), kept)
            answered = await at.client.post(path, content=body)
    assert answered.status_code == 200
    assert server.opened == 1, "a failed exchange's connection was not handed back"


_MORE = b'data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"."}}]}\n\n'


class BreaksOff(CountedConnections):
    """Streams a chat answer's first event, then, on the first request only, `fault`: drops
    the connection (`drop`), goes silent (`stall`), goes on streaming until the host closes
    the connection (`agent leaves`: the agent leaves meanwhile), or sends the rest of the
    answer but not the stream's end (`no end of stream`). Every later request gets its
    whole stream."""

    def __init__(self, fault: str) -> None:
        super().__init__()
        self.fault: str | None = fault
        self.faulted = asyncio.Event()
        """Set once the fault is over: the host closed the connection, or it was dropped."""

    async def answer(
        self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await read_body(head, reader)
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n" + _chunk(_FIRST)
        )
        await writer.drain()
        fault, self.fault = self.fault, None
        try:
            if fault == "drop":
                writer.transport.abort()
            elif fault == "stall":
                await reader.read()  # until the host gives up on it and closes
            elif fault == "no end of stream":
                writer.write(_chunk(_REST))  # the whole answer, then nothing, not even its end
                await writer.drain()
                await reader.read()  # until the host closes the connection
            elif fault == "agent leaves":
                for _ in range(500):  # 10 s at most
                    await asyncio.sleep(0.02)
                    writer.write(_chunk(_MORE))
                    await writer.drain()
        finally:
            if fault is not None:
                self.faulted.set()
        if fault is None:
            writer.write(_chunk(_REST) + b"0\r\n\r\n")
            await writer.drain()


async def test_a_stream_the_agent_leaves_once_it_has_the_last_event_is_recorded_whole(
    tmp_path: Path,
) -> None:
    """An agent's client leaves as soon as it has read the answer's last event (`[DONE]`),
    which may be before the upstream's end of stream reaches the proxy: the exchange is
    recorded with its whole answer, ok, not as one the agent left."""
    server = BreaksOff("no end of stream")
    async with serving(server) as port:
        url = f"http://127.0.0.1:{port}"
        async with agent_on_loopback(tmp_path, _upstream(url, url, timeout=30)) as (at, agent):
            received = b""
            body = {**CHAT_BODY, "stream": True}
            async with agent.stream("POST", at.proxy("/chat/completions"), json=body) as answer:
                async for part in answer.aiter_raw():
                    received += part
                    if received.endswith(b"data: [DONE]\n\n"):
                        break  # as the SDKs do: the answer is whole, the response closed
            await asyncio.wait_for(server.faulted.wait(), 10)
            for _ in range(1000):  # its record comes as the relay ends
                if rows := await at.recorded(model_calls, "status", "error", "response"):
                    break
                await asyncio.sleep(0.01)
    assert received == _FIRST + _REST
    ((status, error, response),) = rows
    assert (status, error) == ("ok", None)
    assert response["content"] == "Hello"


class CutWhole(CountedConnections):
    """Answers the first request's head and part of its body, then drops the connection
    (`drop`) or goes silent (`stall`); every later request gets its whole answer."""

    def __init__(self, fault: str) -> None:
        super().__init__()
        self.fault: str | None = fault

    async def answer(
        self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await read_body(head, reader)
        fault, self.fault = self.fault, None
        if fault is None:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(_CHAT_ANSWER))
            writer.write(_CHAT_ANSWER)
            await writer.drain()
            return
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(_CHAT_ANSWER))
        writer.write(_CHAT_ANSWER[:10])
        await writer.drain()
        if fault == "drop":
            writer.transport.abort()
        else:
            await reader.read()  # until the host gives up on it and closes
        raise ConnectionError


@pytest.mark.parametrize(("fault", "status", "code"), [("drop", 502, "incomplete"),
                                                       ("stall", 504, "timeout")])  # fmt: skip
async def test_a_whole_answer_cut_off_midway_is_told_as_such_and_the_next_exchange_works(
    tmp_path: Path, fault: str, status: int, code: str
) -> None:
    """Its head came: the upstream was reached, and broke off or went silent mid-answer (it
    was told and recorded as "could not be reached")."""
    server = CutWhole(fault)
    async with serving(server) as port:
        url = f"http://127.0.0.1:{port}"
        async with endpoints(tmp_path, _upstream(url, url, timeout=0.3)) as at:
            cut = await at.client.post(at.proxy("/chat/completions"), json=CHAT_BODY)
            answered = await at.client.post(at.proxy("/chat/completions"), json=CHAT_BODY)
            rows = await at.recorded(model_calls, "status", "error")
    assert (cut.status_code, cut.json()["error"]["code"]) == (status, code)
    told = cut.json()["error"]["message"]
    if fault == "drop":
        assert told.startswith(f"the model API at {url} broke off its answer: "), told
    else:
        assert told == f"the model API at {url} sent nothing more in time mid-answer"
    assert rows[0] == ("error", {**rows[0][1], "code": code, "reason": told, "url": url})
    assert answered.status_code == 200
    assert rows[1] == ("ok", None)
    assert server.opened == 2


class _Logged(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def _logged() -> Iterator[list[logging.LogRecord]]:
    """Every record logged meanwhile: the host's own, and its server's (uvicorn's loggers
    do not propagate to the root; its error logger is listened to itself, as an embedded
    host started earlier in this process may have stopped it propagating to `uvicorn`)."""
    handler = _Logged()
    loggers = [logging.getLogger(), logging.getLogger("uvicorn.error")]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield handler.records
    finally:
        for logger in loggers:
            logger.removeHandler(handler)


_CUT_OFF = {
    "drop": ("error", "incomplete"),
    "stall": ("error", "timeout"),
    "agent leaves": ("error", "cancelled"),
}


@pytest.mark.parametrize("fault", list(_CUT_OFF))
async def test_a_stream_cut_off_midway_is_recorded_as_such_and_the_next_exchanges_work(
    tmp_path: Path, fault: str
) -> None:
    """Broken off or gone silent upstream, the agent's stream is cut off too (its client
    fails the answer rather than take a part for the whole) and the exchange recorded as
    failed with why, no traceback logged; left by the agent, it is recorded cancelled and
    its upstream connection closed. The pool serves the next 20 streams either way."""
    server = BreaksOff(fault)
    body = {**CHAT_BODY, "stream": True}
    async with serving(server) as port:
        url = f"http://127.0.0.1:{port}"
        async with agent_on_loopback(tmp_path, _upstream(url, url, timeout=0.3)) as (at, agent):
            received, completed = b"", False
            with _logged() as records:
                with contextlib.suppress(httpx.RemoteProtocolError):
                    async with agent.stream(
                        "POST", at.proxy("/chat/completions"), json=body
                    ) as cut:
                        async for part in cut.aiter_raw():
                            received += part
                            if fault == "agent leaves":
                                break  # the agent closes its connection mid-answer
                        completed = True
                await asyncio.wait_for(server.faulted.wait(), 10)
                for _ in range(1000):  # the record of a stream its agent left comes as it ends
                    if await at.recorded(model_calls, "status"):
                        break
                    await asyncio.sleep(0.01)
            answers = [
                await agent.post(at.proxy("/chat/completions"), json=body) for _ in range(20)
            ]
            rows = await at.recorded(model_calls, "status", "error")
    assert received.startswith(_FIRST)
    # Broken off upstream, the agent's client fails the answer (no clean end to take it for).
    assert completed is (fault == "agent leaves")
    # Logged: only the server's one line for the response it closes unfinished (uvicorn's
    # words), no traceback of a crash.
    unfinished = [("uvicorn.error", "ASGI callable returned without completing response.")]
    logged = [(r.name, r.getMessage()) for r in records if r.levelno >= logging.WARNING]
    assert logged == ([] if fault == "agent leaves" else unfinished)
    assert not [r for r in records if at.token in r.getMessage()]
    (status, error), *later = rows
    assert (status, error["code"]) == _CUT_OFF[fault]
    assert [a.text.endswith("data: [DONE]\n\n") for a in answers] == [True] * 20
    assert later == [("ok", None)] * 20
    assert server.opened == 2, "the cut-off connection was kept, or a later one not reused"


def _content(answer: httpx.Response) -> str:
    """A chat answer's text, whole or streamed (its deltas joined)."""
    if not answer.headers["content-type"].startswith("text/event-stream"):
        return str(answer.json()["choices"][0]["message"]["content"])
    chunks = [json.loads(line[6:]) for line in answer.text.splitlines() if line[:7] == "data: {"]
    return "".join(chunk["choices"][0]["delta"].get("content") or "" for chunk in chunks)


async def test_32_exchanges_at_once_whole_and_streamed_are_each_recorded_once_with_its_answer(
    tmp_path: Path, stand_in: ModelStandIn
) -> None:
    """One invocation's agent with 32 exchanges in flight (a fan-out of sub-tasks): each
    answered its own answer and recorded once, with its own request and answer."""
    asked = [
        _script(stand_in, f"fan-out {n} of 32", [{"content": f"answer {n}"}]) for n in range(32)
    ]
    async with agent_on_loopback(tmp_path, _stand_in_upstream(stand_in)) as (at, agent):
        answers = await asyncio.gather(
            *(
                agent.post(at.proxy("/chat/completions"), json={**body, "stream": n % 2 == 1})
                for n, body in enumerate(asked)
            )
        )
        rows = await at.recorded(model_calls, "ordinal", "status", "stream", "request", "response")
    for n, answer in enumerate(answers):
        assert answer.status_code == 200
        assert _content(answer) == f"answer {n}"
    assert sorted(ordinal for ordinal, *_ in rows) == list(range(len(rows)))
    recorded = {
        request["messages"][0]["content"]: (status, stream, response["content"])
        for _, status, stream, request, response in rows
    }
    assert len(rows) == len(recorded) == 32, "an exchange was recorded twice, or not at all"
    assert recorded == {f"fan-out {n} of 32": ("ok", n % 2 == 1, f"answer {n}") for n in range(32)}


class _Lines(logging.Handler):
    """The access log's lines of the agent's side (client `c`), not the stand-in's own."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("c - "):
            self.lines.append(record.getMessage())


async def test_a_whole_answers_access_line_is_written_after_it_a_streams_as_it_starts(
    tmp_path: Path, stand_in: ModelStandIn
) -> None:
    """uvicorn logs a request's line as its response starts; a whole answer through the
    proxy has it written after its last byte (issue 29), a refusal too, a stream at its start."""
    whole = _script(stand_in, "line after the answer", [{"content": "whole"}])
    streamed = _script(stand_in, "line at the start", [{"content": "streamed"}])
    logger = logging.getLogger(access_log.ACCESS_LOGGER)
    level, handler = logger.level, _Lines()
    access_log.install()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    written: list[tuple[str, int]] = []
    """Each message the agent's side was sent, with how many lines were written by then."""

    def sender(path: str) -> Send:
        async def send(message: Message) -> None:
            if message["type"] == "http.response.start":  # as uvicorn logs it
                logger.info('%s - "%s %s HTTP/%s" %d', "c", "POST", path, "1.1", 200)
            written.append((message["type"], len(handler.lines)))

        return send

    try:
        async with endpoints(tmp_path, _stand_in_upstream(stand_in)) as at:
            for path, asked in [
                (at.proxy("/chat/completions"), whole),
                ("/host/wopeval/openai/no-such-token/v1/chat/completions", whole),
                (at.proxy("/chat/completions"), {**streamed, "stream": True}),
            ]:
                body = json.dumps(asked).encode()
                await at.app(_post_scope(path, body), _sent(body), sender(path))
                written.append(("answered", len(handler.lines)))
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    start, sent, answered = "http.response.start", "http.response.body", "answered"
    assert written[:3] == [(start, 0), (sent, 0), (answered, 1)]  # a whole answer
    assert written[3:6] == [(start, 1), (sent, 1), (answered, 2)]  # the token's refusal
    assert written[6:8] == [(start, 3), (sent, 3)]  # a stream
    assert handler.lines[0] == 'c - "POST /host/wopeval/openai/…/v1/chat/completions HTTP/1.1" 200'


async def test_each_wire_api_has_its_route(tmp_path: Path, stand_in: ModelStandIn) -> None:
    stand_in.script.add("responses please", [{"content": "a response"}])
    stand_in.script.add("messages please", [{"content": "a message"}])
    async with endpoints(tmp_path, _stand_in_upstream(stand_in)) as at:
        response = await at.client.post(
            at.proxy("/responses"), json={"model": "m", "input": "responses please"}
        )
        message = await at.client.post(
            at.messages,
            json={
                "model": "claude",
                "max_tokens": 16,
                "messages": [{"role": "user", "content": "messages please"}],
            },
            headers={"anthropic-version": "2023-06-01", "x-api-key": at.token},
        )
        rows = await at.recorded(model_calls, "api", "status")
    assert response.status_code == 200, response.text
    assert response.json()["output"][0]["content"][0]["text"] == "a response"
    assert message.status_code == 200, message.text
    assert message.json()["content"][0]["text"] == "a message"
    assert rows == [("responses", "ok"), ("messages", "ok")]


async def test_an_upstream_error_is_relayed_as_it_came_and_recorded_failed(
    tmp_path: Path, stand_in: ModelStandIn
) -> None:
    # 400, the least status the proxy relays as the upstream's error.
    failing = _script(stand_in, "fail please", [{"fail_always": {"status": 400}}])
    async with endpoints(tmp_path, _stand_in_upstream(stand_in)) as at:
        whole = await at.client.post(at.proxy("/chat/completions"), json=failing)
        stream = await at.client.post(
            at.proxy("/chat/completions"), json={**failing, "stream": True}
        )
        rows = await at.recorded(model_calls, "status", "error")
    assert (whole.status_code, stream.status_code) == (400, 400)
    assert whole.headers["content-type"] == "application/json"
    assert whole.content == stream.content
    upstream_error = whole.json()["error"]
    assert [status for status, _ in rows] == ["error", "error"]
    for _, error in rows:
        assert (error["status"], error["type"]) == (400, upstream_error["type"])
        assert error["reason"] == f"the model API at {stand_in.base_url} answered HTTP 400"
        assert error["url"] == stand_in.base_url


@pytest.mark.parametrize("status", [429, 503])
async def test_an_upstream_error_goes_to_the_agent_with_its_headers_whole_or_streamed(
    tmp_path: Path, stand_in: ModelStandIn, status: int
) -> None:
    """The SDKs' retries read an error's `Retry-After` (and `retry-after-ms`,
    `x-should-retry`): dropped, an agent retried a rate limit at once, every time."""
    failing = _script(
        stand_in, f"limited {status}", [{"fail_always": {"status": status, "retry_after": "7"}}]
    )
    async with endpoints(tmp_path, _stand_in_upstream(stand_in)) as at:
        whole = await at.client.post(at.proxy("/chat/completions"), json=failing)
        stream = await at.client.post(
            at.proxy("/chat/completions"), json={**failing, "stream": True}
        )
        rows = await at.recorded(model_calls, "status", "error")
    for answer in (whole, stream):
        assert answer.status_code == status
        assert answer.headers["retry-after"] == "7"
        assert answer.headers["content-type"] == "application/json"
        assert answer.headers.get_list("content-length") == [str(len(answer.content))]
        assert "date" not in answer.headers, "the test client's app writes no Date of its own"
    assert whole.json()["error"]["code"] == (
        "rate_limit_exceeded" if status == 429 else "server_error"
    )
    assert [(row_status, error["status"]) for row_status, error in rows] == [("error", status)] * 2


_BAD_GATEWAY_PAGE = b"<html><body><h1>502 Bad Gateway</h1></body></html>"


class LoadBalancer(CountedConnections):
    """A load balancer in front of the model server, answering its own HTML `502` page."""

    async def answer(
        self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await read_body(head, reader)
        writer.write(
            b"HTTP/1.1 502 Bad Gateway\r\nServer: lb\r\nContent-Type: text/html\r\n"
            b"Set-Cookie: a=1\r\nSet-Cookie: b=2\r\n"
            b"Content-Length: %d\r\n\r\n%b" % (len(_BAD_GATEWAY_PAGE), _BAD_GATEWAY_PAGE)
        )
        await writer.drain()


async def test_a_load_balancers_html_error_page_is_relayed_as_it_came_and_recorded(
    tmp_path: Path,
) -> None:
    server = LoadBalancer()
    async with serving(server) as port:
        url = f"http://127.0.0.1:{port}"
        async with endpoints(tmp_path, _upstream(url, url)) as at:
            answers = [
                await at.client.post(
                    at.proxy("/chat/completions"), json={**CHAT_BODY, "stream": stream}
                )
                for stream in (False, True)
            ]
            rows = await at.recorded(model_calls, "status", "error")
    for answer in answers:
        assert (answer.status_code, answer.content) == (502, _BAD_GATEWAY_PAGE)
        assert answer.headers.get_list("content-type") == ["text/html"]
        assert answer.headers.get_list("set-cookie") == ["a=1", "b=2"]
        assert "server" not in answer.headers
    assert [(status, error["status"]) for status, error in rows] == [("error", 502)] * 2
    assert server.opened == 1


async def test_what_no_provider_answers_is_a_502_and_recorded(tmp_path: Path, odd: Odd) -> None:
    async with endpoints(tmp_path, _upstream(odd.url, odd.url)) as at:
        whole = await at.client.post(at.proxy("/chat/completions"), json=CHAT_BODY)
        stream = await at.client.post(
            at.proxy("/chat/completions"), json={**CHAT_BODY, "stream": True}
        )
        rows = await at.recorded(model_calls, "status", "error")
    assert whole.status_code == 502
    assert whole.json()["error"]["code"] == "malformed"
    assert whole.json()["error"]["message"] == "the upstream's answer is not a chat answer"
    assert stream.status_code == 200
    assert stream.text == "not an event stream\n"
    assert [(status, error["code"]) for status, error in rows] == [
        ("error", "malformed"),
        ("error", "incomplete"),
    ]
    assert rows[1][1]["reason"] == "the stream ended before the answer was complete"


async def test_an_upstream_that_cannot_be_reached_or_is_too_slow_is_a_502_or_504(
    tmp_path: Path, odd: Odd
) -> None:
    unreachable = _upstream("http://127.0.0.1:9", "http://127.0.0.1:9")
    async with endpoints(tmp_path, unreachable) as at:
        whole = await at.client.post(at.proxy("/chat/completions"), json=CHAT_BODY)
        stream = await at.client.post(
            at.proxy("/chat/completions"), json={**CHAT_BODY, "stream": True}
        )
        rows = await at.recorded(model_calls, "error")
    assert (whole.status_code, stream.status_code) == (502, 502)
    assert whole.json()["error"] == {
        "message": "the model API at http://127.0.0.1:9 could not be reached: connection refused",
        "type": "api_error",
        "code": "unreachable",
    }
    assert [error["code"] for (error,) in rows] == ["unreachable", "unreachable"]
    assert [error["url"] for (error,) in rows] == ["http://127.0.0.1:9"] * 2
    assert [error["cause"] for (error,) in rows] == ["connection refused"] * 2
    slow = _upstream(odd.url + "/slow", odd.url, timeout=0.2)
    (tmp_path / "slow").mkdir()
    async with endpoints(tmp_path / "slow", slow) as at:
        late = await at.client.post(at.proxy("/chat/completions"), json=CHAT_BODY)
        late_stream = await at.client.post(
            at.proxy("/chat/completions"), json={**CHAT_BODY, "stream": True}
        )
    assert (late.status_code, late_stream.status_code) == (504, 504)
    assert late.json()["error"]["code"] == "timeout"
    assert (
        late.json()["error"]["message"] == f"the model API at {odd.url}/slow did not answer in time"
    )


async def test_a_request_the_proxy_cannot_forward_is_refused_in_the_apis_shape(
    tmp_path: Path,
) -> None:
    async with endpoints(tmp_path) as at:
        no_upstream = await at.client.post(at.proxy("/chat/completions"), json=CHAT_BODY)
        not_json = await at.client.post(at.proxy("/chat/completions"), content=b"{")
        invalid = await at.client.post(at.proxy("/chat/completions"), json={"model": "m"})
        rows = await at.recorded(model_calls, "status", "error")
    assert no_upstream.status_code == 502
    assert no_upstream.json()["error"]["code"] == "no_upstream"
    assert no_upstream.json()["error"]["message"] == "this agent has no model upstream"
    assert (not_json.status_code, not_json.json()["error"]["code"]) == (400, "invalid_json")
    assert not_json.json()["error"]["message"] == "The request body is not JSON."
    assert (invalid.status_code, invalid.json()["error"]["code"]) == (400, "invalid_request")
    with pytest.raises(models.InvalidModelRequest) as why:
        models.CHAT.parse({"model": "m"})
    assert invalid.json()["error"]["message"] == str(why.value)
    no_upstream_error = {"code": "no_upstream", "reason": "this agent has no model upstream"}
    assert rows == [("error", no_upstream_error)]


async def test_under_model_replay_the_recording_answers_whole_or_streamed(
    tmp_path: Path,
) -> None:
    request = models.CHAT.parse(CHAT_BODY)
    answer: dict[str, JsonValue] = {"model": "m-1", "content": "recorded", "finishReason": "stop"}
    fixture = evals.ModelFixture(
        evals.model_request_hash(request.canonical()), answer, "chat", request.canonical(), 0
    )
    replay = ModelServer(evals.ModelReplayCursor([fixture, fixture]))
    async with endpoints(tmp_path, replay=replay) as at:
        whole = await at.client.post(at.proxy("/chat/completions"), json=CHAT_BODY)
        stream = await at.client.post(
            at.proxy("/chat/completions"), json={**CHAT_BODY, "stream": True}
        )
        missed = await at.client.post(
            at.proxy("/chat/completions"), json={**CHAT_BODY, "model": "other"}
        )
        rows = await at.recorded(model_calls, "served_by", "via")
    assert whole.status_code == 200
    assert whole.json()["choices"][0]["message"]["content"] == "recorded"
    assert stream.headers["content-type"].startswith("text/event-stream")
    assert stream.headers["x-accel-buffering"] == "no"
    assert "recorded" in stream.text
    assert missed.status_code == 400
    assert missed.json()["error"]["code"] == "model_replay_miss"
    assert missed.json()["error"]["message"].startswith(
        "model replay: the source run made no request like this one"
    )
    assert rows == [("replay", "proxy"), ("replay", "proxy"), ("miss", "proxy")]


async def test_the_proxy_refuses_every_other_caller_with_one_404(tmp_path: Path) -> None:
    async with endpoints(tmp_path) as at:
        refusing = [
            {"Authorization": f"Bearer {OTHER_KEY}"},
            {"x-api-key": OTHER_KEY},
            {"x-api-key": "no-such-key"},
        ]
        paths = [at.proxy("/chat/completions"), at.proxy("/responses"), at.messages]
        refused = [
            await at.client.post(path, json=CHAT_BODY, headers=headers)
            for path in paths
            for headers in refusing
        ]
        own = await at.client.post(
            at.proxy("/chat/completions"), json=CHAT_BODY, headers={"x-api-key": KEY}
        )
    for answer in refused:
        assert answer.status_code == 404
        assert answer.json() == {"error": "not_found", "message": "No such model endpoint."}
    assert own.status_code == 502, "past the token check: this agent has no upstream"
