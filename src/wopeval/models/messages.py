"""Anthropic Messages (`POST /v1/messages`), whole and streamed.

An answer is recorded as the message the server returned (its content blocks
— text, tool_use, thinking — with their ids, its stop reason and usage). A
streamed answer is read from its events: `message_start` gives the message,
each block is built from its `content_block_start` and deltas (text, the
tool input's JSON pieces, thinking and its signature), `message_delta` gives
the stop reason and the final usage, `message_stop` ends it. A replayed one is
written back as those events, each block's text or input in one delta.

Anthropic's key travels as `x-api-key` with the `anthropic-version` the
client asked for (and its `anthropic-beta`, when it sent one); its errors are
`{"type": "error", "error": {"type", "message"}}`.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

import wopeval.models._sse as _sse
from wopeval.models._api import (
    ApiName,
    InvalidModelRequest,
    ModelAnswer,
    ModelApi,
    ModelRequest,
    Provider,
    Usage,
    integer,
    json_object,
    text,
)

DEFAULT_VERSION = "2023-06-01"
"""`anthropic-version` sent upstream when the client sent none (the API requires one)."""
FORWARDED_HEADERS = ("anthropic-version", "anthropic-beta")
_INPUT_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")
"""Blocks whose `input` streams as `input_json_delta` pieces."""
_ERROR_TYPES = {400: "invalid_request_error", 404: "not_found_error", 429: "rate_limit_error"}


class Messages(ModelApi):
    name: ApiName = "messages"
    provider: Provider = "anthropic"
    upstream_path = "/v1/messages"
    transport_keys = frozenset({"stream"})

    def check(self, body: dict[str, Any]) -> None:
        if not isinstance(body.get("model"), str):
            raise InvalidModelRequest("model: Field required")
        if integer(body.get("max_tokens")) is None:
            raise InvalidModelRequest("max_tokens: Field required")
        if not isinstance(body.get("messages"), list):
            raise InvalidModelRequest("messages: Field required")

    def answer(self, body: Mapping[str, Any]) -> ModelAnswer:
        if body.get("type") != "message" or not isinstance(body.get("content"), list):
            raise ValueError("the answer is not a message")
        # Not copied (ModelApi.answer): a deep copy of a decoded body was ~2 % of the host's CPU
        # on a whole exchange through the proxy (issue 29).
        return ModelAnswer(dict(body))

    def single_turn(
        self, model: str, system: str, user: str, *, max_tokens: int, temperature: float
    ) -> dict[str, JsonValue]:
        return {
            "model": model,
            "system": system,
            "messages": [{"role": "user", "content": user}],
            "max_tokens": max_tokens,
            "temperature": temperature,
        }

    def answer_text(self, answer: ModelAnswer) -> str | None:
        texts = [
            found
            for block in _blocks_of(answer.document.get("content"))
            if block.get("type") == "text" and isinstance(found := block.get("text"), str)
        ]
        return "".join(texts) if texts else None

    def assembler(self) -> StreamedMessage:
        return StreamedMessage(self)

    def served_whole(self, answer: ModelAnswer) -> dict[str, JsonValue]:
        return copy.deepcopy(answer.document)

    def served_stream(self, answer: ModelAnswer, request: ModelRequest) -> Iterator[bytes]:
        document = answer.document
        usage = json_object(document.get("usage"))
        started = {
            **copy.deepcopy(document),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {**usage, "output_tokens": 0},
        }
        yield _sse.named_event({"type": "message_start", "message": started})
        content = document.get("content")
        for index, block in enumerate(content if isinstance(content, list) else []):
            yield from _block_events(index, json_object(block))
        delta = {"stop_reason": document.get("stop_reason")}
        delta["stop_sequence"] = document.get("stop_sequence")
        yield _sse.named_event({"type": "message_delta", "delta": delta, "usage": usage})
        yield _sse.named_event({"type": "message_stop"})

    def usage(self, answer: ModelAnswer) -> Usage | None:
        """Input tokens count the prompt cache's reads and writes too (Anthropic reports
        them apart): all of them are input the model was given."""
        usage = json_object(answer.document.get("usage"))
        given, output = integer(usage.get("input_tokens")), integer(usage.get("output_tokens"))
        if given is None or output is None:
            return None
        cached = ("cache_creation_input_tokens", "cache_read_input_tokens")
        return Usage(given + sum(integer(usage.get(key)) or 0 for key in cached), output)

    def error_body(self, status: int, message: str, code: str) -> dict[str, JsonValue]:
        kind = _ERROR_TYPES.get(status, "invalid_request_error" if status < 500 else "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}

    def error_fields(self, body: object) -> dict[str, JsonValue]:
        kind = text(json_object(json_object(body).get("error")).get("type"))
        return {} if kind is None else {"type": kind}

    def egress_headers(self, key: str | None, sent: Mapping[str, str]) -> dict[str, str]:
        headers = {name: sent[name] for name in FORWARDED_HEADERS if sent.get(name)}
        headers.setdefault("anthropic-version", DEFAULT_VERSION)
        if key is not None:
            headers["x-api-key"] = key
        return headers


def _block_events(index: int, block: dict[str, Any]) -> Iterator[bytes]:
    """A content block as `content_block_start`, its deltas and `content_block_stop`."""
    kind = block.get("type")
    start, deltas = dict(block), []
    if kind == "text":
        start["text"] = ""
        deltas.append({"type": "text_delta", "text": block.get("text") or ""})
    elif kind in _INPUT_BLOCKS:
        start["input"] = {}
        given = json.dumps(block.get("input") or {}, separators=(",", ":"), ensure_ascii=False)
        deltas.append({"type": "input_json_delta", "partial_json": given})
    elif kind == "thinking":
        start.update(thinking="", signature="")
        deltas.append({"type": "thinking_delta", "thinking": block.get("thinking") or ""})
        deltas.append({"type": "signature_delta", "signature": block.get("signature") or ""})
    yield _sse.named_event({"type": "content_block_start", "index": index, "content_block": start})
    for delta in deltas:
        yield _sse.named_event({"type": "content_block_delta", "index": index, "delta": delta})
    yield _sse.named_event({"type": "content_block_stop", "index": index})


@dataclass
class StreamedMessage:
    """The message a stream of Anthropic Messages events adds up to."""

    api: Messages
    message: dict[str, Any] | None = None
    stopped: bool = False
    _blocks: dict[int, dict[str, Any]] = field(default_factory=dict)
    _inputs: dict[int, str] = field(default_factory=dict)

    def feed(self, line: str) -> None:
        event = _sse.data_of(line)
        if event is None:
            return
        kind = event.get("type")
        if kind == "message_start":
            self.message = dict(json_object(event.get("message")))
        elif kind == "content_block_start" and isinstance(event.get("index"), int):
            block = dict(json_object(event.get("content_block")))
            self._blocks[event["index"]] = block
            if block.get("type") in _INPUT_BLOCKS:
                self._inputs[event["index"]] = ""
        elif kind == "content_block_delta" and event.get("index") in self._blocks:
            self._delta(event["index"], json_object(event.get("delta")))
        elif kind == "message_delta" and self.message is not None:
            self.message.update(json_object(event.get("delta")))
            usage = json_object(self.message.get("usage"))
            self.message["usage"] = {**usage, **json_object(event.get("usage"))}
        elif kind == "message_stop":
            self.stopped = True

    def _delta(self, index: int, delta: dict[str, Any]) -> None:
        block, kind = self._blocks[index], delta.get("type")
        if kind == "text_delta":
            block["text"] = (block.get("text") or "") + (text(delta.get("text")) or "")
        elif kind == "input_json_delta" and index in self._inputs:
            self._inputs[index] += text(delta.get("partial_json")) or ""
        elif kind == "thinking_delta":
            block["thinking"] = (block.get("thinking") or "") + (text(delta.get("thinking")) or "")
        elif kind == "signature_delta":
            block["signature"] = text(delta.get("signature")) or ""
        elif kind == "citations_delta":
            block["citations"] = [*(block.get("citations") or []), delta.get("citation")]

    @property
    def complete(self) -> bool:
        return self.stopped and self.message is not None

    def answer(self) -> ModelAnswer:
        """The message; raises ValueError when a tool input's pieces are not JSON."""
        for index, pieces in self._inputs.items():
            self._blocks[index]["input"] = json.loads(pieces) if pieces else {}
        message = {**(self.message or {}), "content": [b for _, b in sorted(self._blocks.items())]}
        # A copy: the blocks are the assembler's, which a later delta would change.
        return self.api.answer(copy.deepcopy(message))


def _blocks_of(content: object) -> list[dict[str, Any]]:
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
