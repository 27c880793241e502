"""A local OpenAI-compatible chat-completions server that plays scripted conversations.

No test reaches a model beyond loopback: this server speaks the real protocol
(`POST /v1/chat/completions`, whole answers and SSE deltas with tool-call
argument deltas, OpenAI's error shape, `Retry-After`), and the real `openai`
SDK talks to it. A conversation is found by its first user message (and,
optionally, a phrase its system prompt contains); its N-th answer is the
script's N-th turn, N being the number of assistant messages the request
already carries. A turn is one of

    {"content": "text"}                      a plain answer
    {"json": {...}}                          a JSON answer (its compact text)
    {"tool_calls": [{"name", "arguments"}]}  one or several tool calls
    {"refusal": "text"}                      a refusal
    {"finish_reason": "length", ...}         any turn may name its finish reason

and may carry `"fail_first": [{"status": 429, "retry_after": "0"}, ...]` (those
answers come first, once each, then the turn) or `"fail_always": {"status": 500}`.

Run it by hand for the examples:
    python tests/_model_server.py --port 8792 --script examples/llm-agent/model-script.json
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from wopeval.api.loopback import loopback_socket, quiet_server

START_DEADLINE_SECONDS = 30.0
REPORTED_SUFFIX = "-0001"
"""The model id an answer reports is the requested one plus this (like a dated snapshot)."""


@dataclass
class Conversation:
    user: str
    turns: list[dict[str, Any]]
    system_contains: str | None = None
    failures_served: dict[int, int] = field(default_factory=dict)
    """Per turn, how many of its `fail_first` answers were given (kept on the conversation:
    its position in the script moves as later conversations are added in front)."""

    def matches(self, messages: list[dict[str, Any]]) -> bool:
        users = [m for m in messages if m.get("role") == "user"]
        if not users or users[0].get("content") != self.user:
            return False
        if self.system_contains is None:
            return True
        system = next((m for m in messages if m.get("role") == "system"), None)
        return system is not None and self.system_contains in str(system.get("content"))


@dataclass
class Received:
    """One request as the server received it."""

    authorization: str | None
    body: dict[str, Any]


@dataclass
class ModelScript:
    conversations: list[Conversation] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(
        self, user: str, turns: list[dict[str, Any]], *, system_contains: str | None = None
    ) -> None:
        """Script a conversation; a later one with the same key is found first."""
        with self._lock:
            self.conversations.insert(0, Conversation(user, turns, system_contains))

    def load(self, document: dict[str, Any]) -> None:
        for entry in reversed(document["conversations"]):
            self.add(entry["user"], entry["turns"], system_contains=entry.get("system_contains"))

    def requests_with(self, user: str) -> list[Received]:
        """The requests received for the conversation whose first user message is `user`."""
        return [r for r in self.received if _first_user(r.body) == user]

    def answer(
        self, body: dict[str, Any]
    ) -> tuple[int, dict[str, Any], dict[str, str]] | dict[str, Any]:
        """Either `(status, error body, headers)` or the turn to answer with."""
        messages = body.get("messages") or []
        with self._lock:
            conversation = next((c for c in self.conversations if c.matches(messages)), None)
            if conversation is None:
                return 400, _error("no script for this conversation", "unscripted"), {}
            turn_index = sum(1 for m in messages if m.get("role") == "assistant")
            if turn_index >= len(conversation.turns):
                return 400, _error("the script has no more turns", "script_exhausted"), {}
            turn = conversation.turns[turn_index]
            always = turn.get("fail_always")
            if always is not None:
                return _failure(always)
            first = turn.get("fail_first") or []
            served = conversation.failures_served.get(turn_index, 0)
            if served < len(first):
                conversation.failures_served[turn_index] = served + 1
                return _failure(first[served])
            return turn


def _first_user(body: dict[str, Any]) -> str | None:
    users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
    return str(users[0].get("content")) if users else None


def _error(message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": code}}


def _failure(spec: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
    status = int(spec["status"])
    headers = {"Retry-After": str(spec["retry_after"])} if "retry_after" in spec else {}
    kind = "rate_limit_exceeded" if status == 429 else "server_error"
    body = {"error": {"message": f"scripted {status}", "type": kind, "code": kind}}
    return status, body, headers


def _message(turn: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if "content" in turn:
        message["content"] = turn["content"]
    if "json" in turn:
        message["content"] = json.dumps(turn["json"], separators=(",", ":"))
    if "refusal" in turn:
        message["refusal"] = turn["refusal"]
    if "tool_calls" in turn:
        message["tool_calls"] = [
            {
                "id": f"call_{index}",
                "type": "function",
                "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])},
            }
            for index, call in enumerate(turn["tool_calls"])
        ]
    return message


def _finish(turn: dict[str, Any]) -> str:
    return str(turn.get("finish_reason") or ("tool_calls" if "tool_calls" in turn else "stop"))


def _usage(body: dict[str, Any], message: dict[str, Any]) -> dict[str, int]:
    """Deterministic token counts: a quarter of the characters, at least one."""
    prompt = max(1, len(json.dumps(body.get("messages"))) // 4)
    completion = max(1, len(json.dumps(message)) // 4)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _completion(body: dict[str, Any], turn: dict[str, Any]) -> dict[str, Any]:
    message = _message(turn)
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 1,
        "model": f"{body.get('model')}{REPORTED_SUFFIX}",
        "choices": [
            {"index": 0, "message": message, "finish_reason": _finish(turn), "logprobs": None}
        ],
        "usage": _usage(body, message),
    }


def _chunks(body: dict[str, Any], turn: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The answer as SSE deltas: content three characters at a time, each tool call's
    arguments in pieces, then the finish reason and (when asked) the usage."""
    message = _message(turn)
    base = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 1,
            "model": f"{body.get('model')}{REPORTED_SUFFIX}"}  # fmt: skip

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    content = message.get("content") or ""
    for start in range(0, len(content), 3):
        yield chunk({"content": content[start : start + 3]})
    if "refusal" in message:
        yield chunk({"refusal": message["refusal"]})
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call["function"]
        opening = {"index": index, "id": call["id"], "type": "function",
                   "function": {"name": function["name"], "arguments": ""}}  # fmt: skip
        yield chunk({"tool_calls": [opening]})
        arguments = function["arguments"]
        for start in range(0, len(arguments), 5):
            piece = {"index": index, "function": {"arguments": arguments[start : start + 5]}}
            yield chunk({"tool_calls": [piece]})
    yield chunk({}, _finish(turn))
    if (body.get("stream_options") or {}).get("include_usage"):
        yield {**base, "choices": [], "usage": _usage(body, message)}


def app(script: ModelScript) -> Starlette:
    async def completions(request: Request) -> Response:
        body = await request.json()
        script.received.append(Received(request.headers.get("authorization"), body))
        answer = script.answer(body)
        if isinstance(answer, tuple):
            status, error, headers = answer
            return JSONResponse(error, status_code=status, headers=headers)
        if body.get("stream") is not True:
            return JSONResponse(_completion(body, answer))

        async def events() -> AsyncIterator[bytes]:
            for chunk in _chunks(body, answer):
                yield b"data: " + json.dumps(chunk).encode() + b"\n\n"
            yield b"data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])


class ModelServer:
    """The server on a loopback port in a thread; `script` is what it plays and saw."""

    def __init__(self, script: ModelScript | None = None, port: int = 0) -> None:
        self.script = script or ModelScript()
        self._socket = loopback_socket(port)
        self._server = quiet_server(app(self.script))
        self._thread = threading.Thread(
            target=lambda: self._server.run(sockets=[self._socket]),
            name="model-server",
            daemon=True,
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._socket.getsockname()[1]}/v1"

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8792)
    parser.add_argument("--script", type=Path, required=True)
    options = parser.parse_args()
    script = ModelScript()
    script.load(json.loads(options.script.read_text(encoding="utf-8")))
    config = uvicorn.Config(app(script), host="127.0.0.1", port=options.port, log_level="info")
    uvicorn.Server(config).run()


if __name__ == "__main__":
    main()
