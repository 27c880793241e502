"""The server: one route per wire API, the request counts, and the server in a thread.

Every API route runs the same steps — read the JSON body, note the request,
check the credential, refuse what the provider refuses, ask the script, answer
whole or streamed — through the `WireApi` each API module implements.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any, Protocol

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from wopeval.hosting.loopback import loopback_socket, quiet_server

from .chat import ChatCompletions
from .errors import Refusal, from_script, invalid
from .messages import Messages
from .responses import Responses
from .script import ModelScript, Received, Reply, Transcript

START_DEADLINE_SECONDS = 30.0
STATS_PATH = "/_stats"


class WireApi(Protocol):
    """One provider API: how it reads a request and renders an answer or a refusal."""

    path: str

    def credential(self, headers: dict[str, str]) -> Refusal | None: ...
    def refusal(self, body: dict[str, Any]) -> Refusal | None: ...
    def first_user(self, body: dict[str, Any]) -> str | None:
        """Read from any body, even one the API refuses (for `requests_with`)."""
        ...

    def transcript(self, body: dict[str, Any]) -> Transcript: ...
    def error_body(self, refusal: Refusal) -> dict[str, Any]: ...
    def whole(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]: ...
    def stream(self, body: dict[str, Any], reply: Reply) -> Iterator[bytes]: ...


class RequestStats:
    """Every HTTP request the server received (its own `/_stats` routes aside), by path:
    a replay that must reach no model asserts zero here."""

    def __init__(self) -> None:
        self._by_path: Counter[str] = Counter()
        self._clients: set[tuple[str, int]] = set()
        self._lock = threading.Lock()

    def count(self, path: str, client: tuple[str, int] | None) -> None:
        with self._lock:
            self._by_path[path] += 1
            if client is not None:
                self._clients.add(client)

    @property
    def connections(self) -> int:
        """The connections requests came on (their client addresses): a caller that keeps
        its connection adds none for its next request."""
        with self._lock:
            return len(self._clients)

    @property
    def requests(self) -> int:
        with self._lock:
            return sum(self._by_path.values())

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {"requests": sum(self._by_path.values()), "by_path": dict(self._by_path)}

    def reset(self) -> None:
        with self._lock:
            self._by_path.clear()
            self._clients.clear()


class _CountRequests:
    def __init__(self, app: ASGIApp, stats: RequestStats) -> None:
        self.app = app
        self.stats = stats

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope["path"].startswith(STATS_PATH):
            client = scope.get("client")
            self.stats.count(scope["path"], None if client is None else tuple(client))
        await self.app(scope, receive, send)


def _endpoint(api: WireApi, script: ModelScript) -> Any:
    def refuse(refusal: Refusal) -> Response:
        body = api.error_body(refusal)
        return JSONResponse(body, status_code=refusal.status, headers=refusal.headers)

    async def endpoint(request: Request) -> Response:
        try:
            body = json.loads(await request.body())
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return refuse(invalid("The request body is not a JSON object."))
        headers = {name.lower(): value for name, value in request.headers.items()}
        script.received.append(Received(api.path, headers, body, api.first_user(body)))
        refused = api.credential(headers) or api.refusal(body)
        if refused is not None:
            return refuse(refused)
        outcome = script.answer(api.transcript(body))
        if not isinstance(outcome, Reply):
            return refuse(from_script(outcome))
        if body.get("stream") is True:
            return StreamingResponse(api.stream(body, outcome), media_type="text/event-stream")
        # Starlette's JSONResponse, written in ASCII when it holds a lone surrogate
        # (`"\\ud800"`), which no UTF-8 holds, as another server may write it.
        answer = api.whole(body, outcome)
        try:
            text = json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode()
        except UnicodeEncodeError:
            text = json.dumps(answer, separators=(",", ":")).encode()
        return Response(text, media_type="application/json")

    return endpoint


def app(script: ModelScript, stats: RequestStats | None = None) -> Starlette:
    counted = stats or RequestStats()

    async def read_stats(_: Request) -> Response:
        return JSONResponse(counted.snapshot())

    async def reset_stats(_: Request) -> Response:
        counted.reset()
        return JSONResponse(counted.snapshot())

    apis: list[WireApi] = [ChatCompletions(), Responses(), Messages()]
    routes = [Route(api.path, _endpoint(api, script), methods=["POST"]) for api in apis]
    routes += [
        Route(STATS_PATH, read_stats, methods=["GET"]),
        Route(f"{STATS_PATH}/reset", reset_stats, methods=["POST"]),
    ]
    application = Starlette(routes=routes)
    application.add_middleware(_CountRequests, stats=counted)
    return application


class ModelServer:
    """The server on a loopback port in a thread; `script` is what it plays and saw,
    `stats` what reached it."""

    def __init__(self, script: ModelScript | None = None, port: int = 0) -> None:
        self.script = script or ModelScript()
        self.stats = RequestStats()
        self._socket = loopback_socket(port)
        self._server = quiet_server(app(self.script, self.stats))
        self._thread = threading.Thread(
            target=lambda: self._server.run(sockets=[self._socket]),
            name="model-server",
            daemon=True,
        )

    @property
    def root_url(self) -> str:
        """Without `/v1`: Anthropic's SDK takes this as its base URL."""
        return f"http://127.0.0.1:{self._socket.getsockname()[1]}"

    @property
    def base_url(self) -> str:
        """With `/v1`: OpenAI's SDK takes this as its base URL."""
        return f"{self.root_url}/v1"

    def start(self) -> None:
        self._thread.start()
        deadline = time.monotonic() + START_DEADLINE_SECONDS
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the model server did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(START_DEADLINE_SECONDS)
        self._socket.close()

    def __enter__(self) -> ModelServer:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()
