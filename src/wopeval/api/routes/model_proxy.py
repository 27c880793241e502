"""The recording model proxy: `/host/wopeval/openai/{token}/v1/chat/completions`.

While a command-, http- or python-lane invocation runs, its agent reaches its
model here (`OPENAI_BASE_URL`, with `OPENAI_API_KEY` set to the token), so any
OpenAI-compatible client is recorded with no change to its code. Each
request goes to the invocation's model recorder — the same one the openai
lane uses (engine/models.py): under model replay it is answered from the
source run's recording (a request the source never made is a `400
model_replay_miss` that reaches no upstream); otherwise it is forwarded to
the agent's upstream with the real key added at egress, streamed (`stream:
true`, relayed delta by delta) or whole, and recorded as executed.

The token follows the MCP endpoint's rules (engine/grants.py): one
invocation, one tenant, valid while it runs, never logged; every refusal is
the same 404 envelope. Past that the route speaks OpenAI's protocol, errors
included (`{"error": {"message", "type", "code"}}`), so OpenAI clients read
them; it is kept out of `/openapi.json`, whose bodies are OpenWOP's.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
from fastapi import APIRouter, Request
from pydantic import JsonValue
from starlette.responses import JSONResponse, Response, StreamingResponse

from wopeval.agents import (
    ModelCallFailed,
    ModelReplayMiss,
    ModelRequest,
    ModelUpstream,
    normalised_answer,
)
from wopeval.api._model_stream import StreamedAnswer, replayed_stream
from wopeval.api.deps import InvocationAccess, InvocationAccessDep
from wopeval.engine.grants import OPENAI_PATH
from wopeval.engine.invocation import Invocation
from wopeval.engine.models import ModelRecorder
from wopeval.wire import errors

router = APIRouter(tags=["host"])
REFUSED = "No such model endpoint."


@router.post(OPENAI_PATH + "{token}/v1/chat/completions", include_in_schema=False)
async def chat_completions(token: str, request: Request, access: InvocationAccessDep) -> Response:
    """One chat completion of a running invocation's agent: replayed, or forwarded and recorded."""
    invocation = _invocation(token, request, access)
    body = await _body(request)
    if isinstance(body, Response):
        return body
    stream = body.get("stream") is True
    model_request = ModelRequest(body, stream=stream)
    recorder = invocation.models
    try:
        replayed = recorder.replayed(model_request, via="proxy")
    except ModelReplayMiss as miss:
        return openai_error(400, str(miss), "model_replay_miss")
    if replayed is not None:
        if not stream:
            return JSONResponse(replayed.completion())
        options = body.get("stream_options")
        usage = isinstance(options, dict) and options.get("include_usage") is True
        return StreamingResponse(
            iter(replayed_stream(replayed, include_usage=usage)), media_type="text/event-stream"
        )
    upstream = invocation.spec.model_upstream
    if upstream is None:
        failure = ModelCallFailed("this agent has no model upstream", {"code": "no_upstream"})
        recorder.record(model_request, None, 0, via="proxy", failure=failure)
        return openai_error(502, str(failure), "no_upstream")
    if stream:
        return await _streamed(access.http, upstream, model_request, recorder)
    return await _whole(access.http, upstream, model_request, recorder)


def _invocation(token: str, request: Request, access: InvocationAccess) -> Invocation:
    """The running invocation the token names; the one 404 for every other case."""
    tenant: str | None = None
    authorization = request.headers.get("authorization")
    # OpenAI clients present the token itself as their key; any other key must be the
    # token's tenant's (like the MCP endpoint).
    if authorization is not None and authorization != f"Bearer {token}":
        try:
            tenant = access.auth.authenticate(authorization).tenant
        except errors.Unauthenticated:
            raise errors.NotFound(REFUSED) from None
    invocation = access.grants.resolve(token, tenant)
    if invocation is None:
        raise errors.NotFound(REFUSED)
    return invocation


async def _body(request: Request) -> dict[str, JsonValue] | Response:
    try:
        body: Any = json.loads(await request.body())
    except ValueError:
        return openai_error(400, "The request body is not JSON.", "invalid_json")
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return openai_error(400, "A chat completion needs `messages`.", "invalid_request")
    return body


def openai_error(status: int, message: str, code: str) -> JSONResponse:
    """An error in OpenAI's shape, which the agent's OpenAI client reads."""
    kind = "invalid_request_error" if status < 500 else "api_error"
    return JSONResponse(
        {"error": {"message": message, "type": kind, "code": code}}, status_code=status
    )


def _request(upstream: ModelUpstream, request: ModelRequest) -> dict[str, Any]:
    """The upstream request: the agent's body as it sent it, the real key added at egress."""
    return {
        "url": f"{upstream.base_url}/chat/completions",
        "json": request.body,
        "headers": {"Accept": "application/json", **upstream.headers()},
        "timeout": upstream.timeout_seconds,
    }


async def _whole(
    http: httpx.AsyncClient, upstream: ModelUpstream, request: ModelRequest, recorder: ModelRecorder
) -> Response:
    started = time.perf_counter()
    try:
        response = await http.post(**_request(upstream, request))
    except httpx.HTTPError as exc:
        return _unreachable(exc, request, recorder, started)
    if response.status_code >= 400:
        _failed(response.status_code, response.content, request, recorder, started)
        return _relayed(response.status_code, response.content)
    try:
        answer = normalised_answer(response.json())
    except ValueError:
        failure = ModelCallFailed(
            "the upstream's answer is not a chat completion", {"code": "malformed"}
        )
        recorder.record(request, None, _elapsed(started), via="proxy", failure=failure)
        return openai_error(502, str(failure), "malformed")
    recorder.record(request, answer, _elapsed(started), via="proxy")
    return _relayed(response.status_code, response.content)


async def _streamed(
    http: httpx.AsyncClient, upstream: ModelUpstream, request: ModelRequest, recorder: ModelRecorder
) -> Response:
    started = time.perf_counter()
    try:
        response = await http.send(
            http.build_request("POST", **_request(upstream, request)), stream=True
        )
    except httpx.HTTPError as exc:
        return _unreachable(exc, request, recorder, started)
    if response.status_code >= 400:
        content = await response.aread()
        await response.aclose()
        _failed(response.status_code, content, request, recorder, started)
        return _relayed(response.status_code, content)

    async def relay() -> AsyncIterator[bytes]:
        streamed = StreamedAnswer()
        try:
            async for line in response.aiter_lines():
                streamed.feed(line)
                yield (line + "\n").encode()
        finally:
            await response.aclose()
            if streamed.complete:
                answer = normalised_answer(streamed.completion())
                recorder.record(request, answer, _elapsed(started), via="proxy")
            else:
                failure = ModelCallFailed(
                    "the stream ended before the answer was complete", {"code": "incomplete"}
                )
                recorder.record(request, None, _elapsed(started), via="proxy", failure=failure)

    return StreamingResponse(relay(), media_type="text/event-stream")


def _failed(
    status: int, content: bytes, request: ModelRequest, recorder: ModelRecorder, started: float
) -> None:
    """Record an upstream's error answer: its status, and its error's type and code."""
    error: dict[str, JsonValue] = {"status": status}
    try:
        found = json.loads(content).get("error")
    except (ValueError, AttributeError):
        found = None
    if isinstance(found, dict):
        error.update({k: found[k] for k in ("type", "code") if isinstance(found.get(k), str)})
    failure = ModelCallFailed(f"the model API answered HTTP {status}", error)
    recorder.record(request, None, _elapsed(started), via="proxy", failure=failure)


def _unreachable(
    exc: httpx.HTTPError, request: ModelRequest, recorder: ModelRecorder, started: float
) -> Response:
    timed_out = isinstance(exc, httpx.TimeoutException)
    code = "timeout" if timed_out else "unreachable"
    reason = "did not answer in time" if timed_out else "could not be reached"
    failure = ModelCallFailed(f"the model API {reason}", {"code": code})
    recorder.record(request, None, _elapsed(started), via="proxy", failure=failure)
    return openai_error(504 if timed_out else 502, str(failure), code)


def _relayed(status: int, content: bytes) -> Response:
    return Response(content, status_code=status, media_type="application/json")


def _elapsed(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)
