"""The recording model proxy: OpenAI Chat Completions and Responses, Anthropic Messages.

    POST /host/wopeval/openai/{token}/v1/chat/completions
    POST /host/wopeval/openai/{token}/v1/responses
    POST /host/wopeval/anthropic/{token}/v1/messages

While a command-, http- or python-lane invocation runs, its agent reaches its
model here (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`, with the token as the
key), so a client of either SDK is recorded with no change to its code. Each
route hands its wire API's adapter (wopeval.models) to one handler, which
never asks which provider is behind it: the request goes to the invocation's
model recorder — the one the LLM lanes use (engine/recording/models.py) — and under
model replay is answered from the source run's recording, whole or as that
API's SSE events (a request the source never made is a `400` naming the
nearest recorded request and the diff, and reaches no upstream); otherwise it
is forwarded to the agent's upstream for that API with the real key added at
egress, relayed whole or chunk by chunk as it arrives, and recorded as
executed (a streamed answer reassembled into the whole one).

The token is checked as the MCP endpoint checks it (api/invocation_token.py):
one invocation, one tenant, valid while it runs, never logged; a key presented
with it (`Authorization: Bearer` or `x-api-key`, Anthropic's clients) is the
token itself or an API key of its tenant; every refusal is the same 404
envelope. Past that the routes speak their API's
protocol, errors included, so the agent's client reads them; they are kept
out of `/openapi.json`, whose bodies are OpenWOP's.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable

import httpcore
from fastapi import APIRouter
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from wopeval import models
from wopeval.agents import shown_url, status_refusal, transport_refusal
from wopeval.api.access_log import AfterTheAnswer
from wopeval.api.deps import InvocationAccess
from wopeval.api.errors import envelope_response
from wopeval.api.invocation_token import invocation_for
from wopeval.api.json_response import JSONResponse
from wopeval.api.request_guard import StrictBody, strict_body
from wopeval.api.upstream_pools import UPSTREAM_ERRORS, UpstreamPools, hand_back, whole_body
from wopeval.engine.recording.grants import ANTHROPIC_PATH, OPENAI_PATH
from wopeval.engine.recording.models import ModelRecorder
from wopeval.wire import errors

router = APIRouter(tags=["host"])
REFUSED = "No such model endpoint."
NOT_RECORDED = (
    "The host could not record this exchange (its database was out of reach); its run has failed."
)


def _route(api: models.ModelApi) -> Callable[[Request], Awaitable[Response]]:
    """The endpoint of one wire API: a plain Starlette one, below FastAPI's parameter and
    dependency handling (with the routing, ~13 % of the host's work on an exchange, issue 29)."""

    async def endpoint(request: Request) -> Response:
        access: InvocationAccess = request.app.state.invocation_access
        token = request.path_params["token"]
        return await _exchange(api, token, request.headers, await request.body(), access)

    endpoint.__doc__ = f"One {api.name} exchange of a running invocation's agent."
    return endpoint


# Chat Completions; Responses (`previous_response_id` forwarded as sent); Anthropic Messages.
_ROUTES = (
    (OPENAI_PATH, "/v1/chat/completions", models.CHAT),
    (OPENAI_PATH, "/v1/responses", models.RESPONSES),
    (ANTHROPIC_PATH, "/v1/messages", models.MESSAGES),
)
for _prefix, _suffix, _api in _ROUTES:
    router.add_route(
        _prefix + "{token}" + _suffix, _route(_api), methods=["POST"], include_in_schema=False
    )

_APIS = {(prefix, suffix): api for prefix, suffix, api in _ROUTES}
_PATH = re.compile(
    "("
    + "|".join(re.escape(prefix) for prefix in dict.fromkeys(p for p, _, _ in _ROUTES))
    + ")([^/]+)("
    + "|".join(re.escape(suffix) for _, suffix, _ in _ROUTES)
    + ")"
)
"""The routes' paths in one pattern: a token is one path segment (`{token}`, as Starlette
matches it); a prefix and suffix that are no route's pair are left to the router."""


class ProxyExchanges:
    """Pure ASGI, the innermost of the host's layers: a `POST` to one of the proxy's routes
    is answered here, by the routes' own `_exchange`, below FastAPI's exception layer and
    router (the route match, the request wrapper and the exception handlers' send
    wrapper, ~4 % of the host's CPU on a whole exchange, issue 29). Every layer of the
    host around it (the version header, the request guard with its size limit and strict
    JSON, the crash guard) still wraps it. The token's refusal is the routes' one 404
    envelope, as the exception handler renders it; any other request, another method or
    a path under a `root_path` goes on to the router, which answers it as before. A whole
    answer's access-log line is written once the answer is (api/access_log.py); a
    stream's as it starts, as uvicorn writes it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        claim = claimed(scope)
        if claim is None:
            await self.app(scope, receive, send)
            return
        api, token = claim
        # The body the request guard read and parsed, else (not JSON by its type) read here.
        body: StrictBody | bytes | None = strict_body(scope) or await _body(receive)
        if body is None:
            return  # the agent went away mid-body; nothing is left to answer
        access: InvocationAccess = scope["app"].state.invocation_access
        try:
            response = await _exchange(api, token, Headers(scope=scope), body, access)
        except errors.WireError as refusal:
            response = envelope_response(refusal)
        if isinstance(response, StreamingResponse):
            await response(scope, receive, send)  # its line as it starts, not at its end
            return
        with AfterTheAnswer():  # the access log's line written once the answer is
            await response(scope, receive, send)


def claimed(scope: Scope) -> tuple[models.ModelApi, str] | None:
    """The wire API and token of a request the proxy's layer answers: a `POST` to one of
    the routes' paths, not under a `root_path` (whose match is the router's)."""
    if scope["type"] != "http" or scope["method"] != "POST" or scope.get("root_path"):
        return None
    matched = _PATH.fullmatch(scope["path"])
    api = None if matched is None else _APIS.get((matched.group(1), matched.group(3)))
    return None if matched is None or api is None else (api, matched.group(2))


def serves(scope: Scope) -> bool:
    """Whether the proxy's layer answers the request (the request guard's match of it)."""
    return claimed(scope) is not None


async def _body(receive: Receive) -> bytes | None:
    """The request's body as its messages bring it, where the request guard (the host's or a
    queue worker's app's) has not parsed it: one whose `Content-Type` is not JSON, which it
    has counted and hands on in one; None when the client left before its end."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _exchange(
    api: models.ModelApi,
    token: str,
    headers: Headers,
    body: StrictBody | bytes,
    access: InvocationAccess,
) -> Response:
    """One exchange: replayed, or forwarded and recorded. `body` as the request guard read
    and parsed it, or as received (parsed here)."""
    invocation = invocation_for(token, headers, access, REFUSED)
    try:
        if isinstance(body, StrictBody):
            model_request = api.parse(body.value)
            body = body.raw
        else:
            model_request = api.parse(json.loads(body))
    except models.InvalidModelRequest as exc:
        return _error(api, 400, str(exc), "invalid_request")
    except ValueError:
        return _error(api, 400, "The request body is not JSON.", "invalid_json")
    if invocation.journal.lost:
        # A step of the invocation's unit did not land (the database out of reach): its
        # run ends failed, and an exchange recorded now would never land either. The
        # agent gets no answer, nothing goes upstream, and nothing is recorded.
        return _error(api, 503, NOT_RECORDED, "store_unreachable")
    recorder = invocation.models
    try:
        replayed = recorder.replayed(model_request, via="proxy")
    except models.ModelReplayMiss as miss:
        return _error(api, 400, str(miss), "model_replay_miss")
    if replayed is not None:
        if not model_request.stream:
            return JSONResponse(api.served_whole(replayed))
        events = api.served_stream(replayed, model_request)
        return _streamed(events)
    upstream = invocation.spec.model_upstream
    if upstream is None:
        failure = models.ModelCallFailed(
            "this agent has no model upstream", {"code": "no_upstream"}
        )
        recorder.record(model_request, None, 0, via="proxy", failure=failure)
        return _error(api, 502, str(failure), "no_upstream")
    target = upstream.request(model_request, headers)
    forward = _Forward(access.upstreams, target, upstream.timeout_seconds, model_request, recorder)
    return await (forward.streamed(body) if model_request.stream else forward.whole(body))


def _streamed(events: Iterable[bytes] | AsyncIterable[bytes]) -> StreamingResponse:
    """A model stream as the agent gets it. `X-Accel-Buffering: no` keeps nginx from holding
    the stream until it ends (docs/deploy.md, "Behind a reverse proxy"): behind a buffering
    proxy, the agent's first token would wait for its last."""
    return _Stream(events, media_type="text/event-stream", headers={"X-Accel-Buffering": "no"})


class _BrokenOff(Exception):
    """The upstream's stream broke off or went silent past its timeout (recorded so): the
    agent's is left unfinished."""


class _Stream(StreamingResponse):
    """A model stream whose upstream's may break off: then the agent's ends as it did, cut
    off (no last chunk: its server closes the connection), so that its client fails the
    answer rather than take what came for the whole. Already recorded, it is no crash of
    the host's: no traceback in its log (its server's one line for an unfinished answer)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        with contextlib.suppress(_BrokenOff):
            await super().__call__(scope, receive, send)


def _error(api: models.ModelApi, status: int, message: str, code: str) -> JSONResponse:
    """An error of the proxy's own, in the API's shape, which the agent's client reads."""
    return JSONResponse(api.error_body(status, message, code), status_code=status)


class _Forward:
    """One request forwarded upstream, relayed to the agent and recorded as executed.

    The agent's body goes upstream as it sent it: parsed for the record, never
    re-serialised for the wire."""

    def __init__(
        self,
        upstreams: UpstreamPools,
        target: models.UpstreamRequest,
        timeout_seconds: float,
        request: models.ModelRequest,
        recorder: ModelRecorder,
    ) -> None:
        self._upstreams = upstreams
        self._target = target
        self._timeout = timeout_seconds
        self._request = request
        self._recorder = recorder
        self._started = time.perf_counter()

    @property
    def _url(self) -> str:
        """The provider's base URL, as a failure names it (parsed only for a failure)."""
        return shown_url(self._target.url.removesuffix(self._request.api.upstream_path))

    async def _send(self, body: bytes) -> httpcore.Response:
        target = self._target
        return await self._upstreams.post(target.url, target.headers, body, self._timeout)

    async def whole(self, body: bytes) -> Response:
        try:
            response = await self._send(body)
        except UPSTREAM_ERRORS as exc:
            return self._unreachable(exc)
        return await self._read(response)

    async def streamed(self, body: bytes) -> Response:
        try:
            response = await self._send(body)
        except UPSTREAM_ERRORS as exc:
            return self._unreachable(exc)
        if response.status >= 400:
            return await self._read(response)
        return _streamed(self._relay(response))

    async def _read(self, response: httpcore.Response) -> Response:
        """The whole answer whose head has come, read, recorded and relayed; cut off midway,
        the proxy's own error (its head came: the upstream was reached)."""
        try:
            content = await whole_body(response)
        except UPSTREAM_ERRORS as exc:
            failure = self._broken_off(exc)
            self._record(None, failure)
            status = 504 if failure.error["code"] == "timeout" else 502
            return _error(self._request.api, status, str(failure), str(failure.error["code"]))
        return await self._answered(response, content)

    async def _answered(self, response: httpcore.Response, content: bytes) -> Response:
        """The upstream's whole answer `content`, recorded, as the agent gets it (relayed as it
        came, or the proxy's own error when it is no answer of its API); its connection goes
        back to the pool once that answer has been written (`_Relayed`)."""
        try:
            error = self._recorded(response.status, content)
        except BaseException:
            await hand_back(response)
            raise
        if error is not None:
            return _Relayed(response, error.status_code, bytes(error.body))
        if response.status >= 400:
            # An error goes to the agent with the upstream's headers: its SDK's retry reads
            # them (`Retry-After`, `retry-after-ms`, `x-should-retry`), and a load balancer's
            # HTML page keeps its own `Content-Type`. Only an error: on the hot path an
            # answer's headers are the proxy's (issue 29).
            return _Relayed(response, response.status, content, _end_to_end(response.headers))
        return _Relayed(response, response.status, content)

    def _recorded(self, status: int, content: bytes) -> JSONResponse | None:
        """Record the whole answer `content`; the proxy's own error instead of it, if any."""
        if status >= 400:
            self._failed(status, content)
            return None
        api = self._request.api
        try:
            answer = api.answer(json.loads(content))
        except ValueError:
            failure = models.ModelCallFailed(
                f"the upstream's answer is not a {api.name} answer", {"code": "malformed"}
            )
            self._record(None, failure)
            return _error(api, 502, str(failure), "malformed")
        self._record(answer)
        return None

    async def _relay(self, response: httpcore.Response) -> AsyncIterator[bytes]:
        """The upstream's bytes as they arrive, chunk by chunk as it sent them (one write to
        the agent per chunk, not per line: a chunk of many events costs one); the answer its
        lines add up to, recorded at the end, before the stream's end goes to the agent.

        A chunk is only kept while the stream runs: its lines are read once, all together,
        when it ends (one decode and one split of the whole, not one per event; issue 29).

        A stream the upstream breaks off, or lets go silent past its timeout, is recorded as
        failed with why, and the agent's is cut off too (`_Stream`); one the agent leaves is
        recorded as cancelled, and its upstream connection closed."""
        relayed: list[bytes] = []
        ended = False
        broken_off: models.ModelCallFailed | None = None
        try:
            try:
                async for chunk in response.aiter_stream():
                    relayed.append(chunk)  # before it goes: the agent may leave as it does
                    yield chunk
            except UPSTREAM_ERRORS as exc:
                broken_off = self._broken_off(exc)
                raise _BrokenOff from exc
            ended = True
        finally:
            await response.aclose()  # mid-stream, the upstream's connection is closed
            if broken_off is not None:
                self._record(None, broken_off)
            elif ended:
                self._record_stream(relayed, _failure(_ENDED_SHORT, "incomplete"))
            else:
                # Ended on the agent's side (it left, or the host is stopping), not the
                # upstream's fault. An agent's client leaves as soon as it has the answer's
                # last event, which may be before the upstream's end of stream has come: a
                # whole answer is recorded as one.
                self._record_stream(relayed, _failure(_LEFT_SHORT, "cancelled"))

    def _broken_off(self, exc: Exception) -> models.ModelCallFailed:
        """What is recorded of an answer, whole or streamed, that the upstream broke off, or
        let go silent past its timeout, before its end."""
        url = self._url
        if isinstance(exc, httpcore.TimeoutException):
            return models.ModelCallFailed(
                f"the model API at {url} sent nothing more in time mid-answer",
                {"code": "timeout", "url": url},
            )
        return models.ModelCallFailed(
            f"the model API at {url} broke off its answer: {exc}",
            {"code": "incomplete", "cause": str(exc), "url": url},
        )

    def _record_stream(self, relayed: list[bytes], cut_short: models.ModelCallFailed) -> None:
        """Record the answer the stream's chunks `relayed` add up to; `cut_short` when they
        hold no whole answer."""
        assembler = self._request.api.assembler()
        for line in models.SseLines().feed(b"".join(relayed), final=True):
            assembler.feed(line)
        if not assembler.complete:
            self._record(None, cut_short)
            return
        try:
            answer = assembler.answer()
        except ValueError:
            self._record(None, _failure("the streamed answer does not add up to one", "malformed"))
            return
        self._record(answer)

    def _failed(self, status: int, content: bytes) -> None:
        """Record an upstream's error answer: its status, and its error's type and code."""
        try:
            body: object = json.loads(content)
        except ValueError:
            body = None
        refusal = status_refusal(status, self._request.api.error_fields(body), None)
        self._record(None, refusal.failure(self._url))

    def _unreachable(self, exc: Exception) -> Response:
        timed_out = isinstance(exc, httpcore.TimeoutException)
        refusal = transport_refusal(exc, timed_out)
        failure = refusal.failure(self._url)
        self._record(None, failure)
        code = str(refusal.error["code"])
        return _error(self._request.api, 504 if timed_out else 502, str(failure), code)

    def _record(
        self, answer: models.ModelAnswer | None, failure: models.ModelCallFailed | None = None
    ) -> None:
        elapsed = int((time.perf_counter() - self._started) * 1000)
        self._recorder.record(self._request, answer, elapsed, via="proxy", failure=failure)


_ENDED_SHORT = "the stream ended before the answer was complete"
_LEFT_SHORT = "the agent left before the stream's end"


def _failure(reason: str, code: str) -> models.ModelCallFailed:
    return models.ModelCallFailed(reason, {"code": code})


class _Relayed(Response):
    """A whole answer to the agent, with the upstream connection its content came on: that
    connection is handed back once the answer's last byte is written (or its write failed),
    not before, as a bare relay's is: the hand-back (httpcore's end of the response under its
    lock, a shielded cancel scope, the pool's bookkeeping; ~5 % of the host's CPU on a whole
    exchange) is not on the exchange's way (issue 29)."""

    def __init__(
        self,
        upstream: httpcore.Response,
        status: int,
        content: bytes,
        headers: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        super().__init__(content, status_code=status, media_type="application/json")
        if headers is not None:  # as they came, repeated ones too; JSON unless they name a type
            typed = any(name == b"content-type" for name, _ in headers)
            own = [(n, v) for n, v in self.raw_headers if n != b"content-type" or not typed]
            self.raw_headers = own + headers
        self._upstream = upstream

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await hand_back(self._upstream)


_NOT_RELAYED = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"transfer-encoding",
        b"te",
        b"trailer",
        b"upgrade",
        b"content-length",
        b"date",
        b"server",
    }
)
"""An upstream's headers that are its connection's, not its answer's (RFC 9110 §7.6.1), and
those the host's server writes itself (a second `Date` or `Server` would be a duplicate)."""


def _end_to_end(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """The headers of an upstream's answer that go on to the agent with it, named in lower
    case as ASGI sends them."""
    relayed = [(name.lower(), value) for name, value in headers]
    return [(name, value) for name, value in relayed if name not in _NOT_RELAYED]
