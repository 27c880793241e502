"""The official SDKs reading what an adapter serves: each client talks to a transport that
answers with the adapter's bytes, so a test sees a replayed answer exactly as an agent's SDK
does."""

from __future__ import annotations

import json
from collections.abc import Iterable

import anthropic
import httpx2
import openai

from wopeval.models import ModelAnswer, ModelRequest


def serving(request: ModelRequest, answer: ModelAnswer) -> httpx2.Client:
    """An HTTP client whose every request is answered by `request.api` serving `answer`, whole
    or as its stream (as the request asked)."""
    api = request.api

    def answered(sent: httpx2.Request) -> httpx2.Response:
        assert sent.url.path.endswith(api.upstream_path)
        assert json.loads(sent.content).get("stream", False) is request.stream
        if not request.stream:
            return httpx2.Response(200, json=api.served_whole(answer))
        body = b"".join(api.served_stream(answer, request))
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    return httpx2.Client(transport=httpx2.MockTransport(answered))


def openai_client(request: ModelRequest, answer: ModelAnswer) -> openai.OpenAI:
    http = serving(request, answer)
    return openai.OpenAI(api_key="k", base_url="http://model.test/v1", http_client=http)


def anthropic_client(request: ModelRequest, answer: ModelAnswer) -> anthropic.Anthropic:
    http = serving(request, answer)
    return anthropic.Anthropic(api_key="k", base_url="http://model.test", http_client=http)


def lines(events: Iterable[bytes]) -> list[str]:
    """SSE bytes as the lines the proxy relays (and feeds its assembler)."""
    return b"".join(events).decode().split("\n")
