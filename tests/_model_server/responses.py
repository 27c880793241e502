"""OpenAI Responses (`POST /v1/responses`): whole answers and streamed events.

`input` is a string (one user message) or a list of items: messages,
`function_call` and `function_call_output` items (others, such as reasoning,
are carried along). `previous_response_id` continues a stored response (every
response is stored unless the request says `store: false`); `instructions`
are the request's own, never carried over. The N-th answer of a conversation
is its script's N-th turn, N being the number of model turns it holds: runs of
assistant messages, function calls and reasoning items, the previous
responses' included.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from typing import Any

from . import responses_checks, responses_stream
from .chat import REPORTED_SUFFIX
from .checks import openai_credential
from .errors import Refusal, openai_body
from .script import Reply, Transcript, text_of

PATH = "/v1/responses"
SYSTEM_ROLES = ("system", "developer")
MODEL_ITEMS = ("function_call", "reasoning")


def input_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    raw = body["input"]
    if isinstance(raw, str):
        return [{"type": "message", "role": "user", "content": raw}]
    return [{"type": "message", **item} for item in raw]


def _made_by_model(item: dict[str, Any]) -> bool:
    return item["type"] in MODEL_ITEMS or (
        item["type"] == "message" and item.get("role") == "assistant"
    )


class Responses:
    path = PATH

    def __init__(self) -> None:
        self._stored: dict[str, list[dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def credential(self, headers: dict[str, str]) -> Refusal | None:
        return openai_credential(headers)

    def _prior(self, body: dict[str, Any]) -> list[dict[str, Any]] | None:
        """The stored conversation the request continues ([] for none; None: unknown id)."""
        previous = body.get("previous_response_id")
        if previous is None:
            return []
        with self._lock:
            return self._stored.get(previous)

    def conversation(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        return (self._prior(body) or []) + input_items(body)

    def refusal(self, body: dict[str, Any]) -> Refusal | None:
        refused = responses_checks.refusal(body)
        if refused:
            return refused
        if self._prior(body) is None:
            return responses_checks.previous_not_found(str(body["previous_response_id"]))
        return responses_checks.pairing(self.conversation(body))

    def first_user(self, body: dict[str, Any]) -> str | None:
        try:
            items = self.conversation(body)
        except (KeyError, TypeError):
            return None
        users = [i for i in items if i.get("type") == "message" and i.get("role") == "user"]
        return text_of(users[0].get("content")) if users else None

    def transcript(self, body: dict[str, Any]) -> Transcript:
        items = self.conversation(body)
        messages = [i for i in items if i["type"] == "message"]
        system = [text_of(m["content"]) or "" for m in messages if m["role"] in SYSTEM_ROLES]
        if isinstance(body.get("instructions"), str):
            system.insert(0, body["instructions"])
        made = [_made_by_model(item) for item in items]
        turns = sum(
            1 for before, now in zip([False, *made], made, strict=False) if now and not before
        )
        tools = [t["name"] for t in body.get("tools") or [] if t["type"] == "function"]
        return Transcript(
            first_user=self.first_user(body),
            system="\n".join(system),
            turns_taken=turns,
            offered=frozenset(tools),
        )

    def error_body(self, refusal: Refusal) -> dict[str, Any]:
        return openai_body(refusal)

    def whole(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        return self._respond(body, reply)

    def stream(self, body: dict[str, Any], reply: Reply) -> Iterator[bytes]:
        for event in responses_stream.events(self._respond(body, reply)):
            line = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
            yield line.encode()

    def _respond(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        """The response, stored (unless `store: false`) for a later `previous_response_id`."""
        conversation = self.conversation(body)
        response = response_object(body, reply, conversation)
        if body.get("store", True) is not False:
            with self._lock:
                self._stored[response["id"]] = conversation + response["output"]
        return response


def output_items(reply: Reply) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    part: dict[str, Any] | None = None
    if reply.text is not None:
        part = {"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}
    if reply.refusal is not None:
        part = {"type": "refusal", "refusal": reply.refusal}
    if part is not None:
        items.append(
            {
                "id": f"msg_{reply.turn_index}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [part],
            }
        )
    for index, call in enumerate(reply.calls):
        items.append(
            {
                "id": f"fc_{reply.turn_index}_{index}",
                "type": "function_call",
                "status": "completed",
                "call_id": f"call_{reply.turn_index}_{index}",
                "name": call.name,
                "arguments": call.arguments,
            }
        )
    return items


def _response_id(body: dict[str, Any], output: list[dict[str, Any]]) -> str:
    """Derived from the request and the answer: the same exchange gets the same id in every
    run, so two recordings of one conversation read alike."""
    exchange = json.dumps([body, output], sort_keys=True)
    return "resp_" + hashlib.sha256(exchange.encode()).hexdigest()[:40]


def response_object(
    body: dict[str, Any], reply: Reply, conversation: list[dict[str, Any]]
) -> dict[str, Any]:
    output = output_items(reply)
    # Deterministic token counts: a quarter of the characters, at least one.
    read = max(1, len(json.dumps([body.get("instructions"), conversation])) // 4)
    written = max(1, len(json.dumps(output)) // 4)
    incomplete = reply.finish == "length"
    return {
        "id": _response_id(body, output),
        "object": "response",
        "created_at": 1,
        "status": "incomplete" if incomplete else "completed",
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": f"{body['model']}{REPORTED_SUFFIX}",
        "output": output,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "store": body.get("store", True),
        "temperature": body.get("temperature", 1.0),
        "text": body.get("text") or {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "top_p": body.get("top_p", 1.0),
        "truncation": body.get("truncation", "disabled"),
        "usage": {
            "input_tokens": read,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": written,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": read + written,
        },
        "metadata": body.get("metadata") or {},
        "user": body.get("user"),
    }
