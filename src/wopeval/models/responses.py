"""OpenAI Responses (`POST …/v1/responses`), whole and streamed.

An answer is recorded as the response object the server returned (its
`output` items — messages, function calls, reasoning — with their ids), so a
replay hands the agent back exactly what it got. A streamed answer is read
from its events: the `response.completed` (or `response.incomplete`) event
carries the whole response; items a server left out of it are taken from the
`response.output_item.done` events. A replayed one is written back as the
events a Responses server sends: created, in progress, each item added, its
text or arguments as one delta, the item done, completed.

`previous_response_id` is forwarded as sent: the conversation it names lives
at the provider. Under replay the request is matched on what the agent sent
(that id included); the replayed answers carry their recorded ids, so an
agent that chains them sends the ids the source run sent.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

import wopeval.models._sse as _sse
from wopeval.models._api import (
    ApiName,
    InvalidModelRequest,
    ModelAnswer,
    ModelRequest,
    Usage,
    integer,
    json_object,
)
from wopeval.models._openai import OpenAIApi
from wopeval.wire.json_text import JsonObject

_ENDED = ("response.completed", "response.incomplete")
"""The events that carry a whole answer (an `incomplete` one was cut off, by
`max_output_tokens` say, and is still the model's answer)."""


class Responses(OpenAIApi):
    name: ApiName = "responses"
    upstream_path = "/responses"
    transport_keys = frozenset({"stream", "stream_options"})

    def check(self, body: JsonObject) -> None:
        if not isinstance(body.get("model"), str):
            raise InvalidModelRequest("A response needs `model`.")
        if "input" in body and not isinstance(body["input"], str | list):
            raise InvalidModelRequest("`input` must be a string or a list of items.")

    def answer(self, body: Mapping[str, Any]) -> ModelAnswer:
        if body.get("object") != "response" or not isinstance(body.get("output"), list):
            raise ValueError("the answer is not a response")
        # Not copied (ModelApi.answer): a deep copy of a decoded body was ~2 % of the host's CPU
        # on a whole exchange through the proxy (issue 29).
        return ModelAnswer(dict(body))

    def single_turn(
        self, model: str, system: str, user: str, *, max_tokens: int, temperature: float
    ) -> dict[str, JsonValue]:
        return {
            "model": model,
            "instructions": system,
            "input": user,
            "max_output_tokens": max_tokens,
            "temperature": temperature,
        }

    def answer_text(self, answer: ModelAnswer) -> str | None:
        # The `output_text` parts of the answer's message items, in order.
        texts = [
            part["text"]
            for item in _list(answer.document.get("output"))
            if json_object(item).get("type") == "message"
            for part in _list(json_object(item).get("content"))
            if json_object(part).get("type") == "output_text"
            and isinstance(json_object(part).get("text"), str)
        ]
        return "".join(texts) if texts else None

    def assembler(self) -> StreamedResponse:
        return StreamedResponse(self)

    def served_whole(self, answer: ModelAnswer) -> dict[str, JsonValue]:
        return copy.deepcopy(answer.document)

    def served_stream(self, answer: ModelAnswer, request: ModelRequest) -> Iterator[bytes]:
        return _Replay(answer.document).events()

    def usage(self, answer: ModelAnswer) -> Usage | None:
        usage = json_object(answer.document.get("usage"))
        given = integer(usage.get("input_tokens")), integer(usage.get("output_tokens"))
        return None if given[0] is None or given[1] is None else Usage(given[0], given[1])


@dataclass
class StreamedResponse:
    """The response a stream of Responses events adds up to."""

    api: Responses
    response: JsonObject | None = None
    _items: dict[int, Any] = field(default_factory=dict)

    def feed(self, line: str) -> None:
        event = _sse.data_of(line)
        if event is None:
            return
        kind = event.get("type")
        if kind == "response.output_item.done" and isinstance(event.get("output_index"), int):
            self._items[event["output_index"]] = event.get("item")
        elif kind in _ENDED and isinstance(event.get("response"), dict):
            self.response = event["response"]

    @property
    def complete(self) -> bool:
        return self.response is not None

    def answer(self) -> ModelAnswer:
        response = dict(self.response or {})
        if not isinstance(response.get("output"), list):
            response["output"] = [self._items[index] for index in sorted(self._items)]
        return self.api.answer(response)


@dataclass
class _Replay:
    """Writes a recorded response as its stream of events, numbered from 0."""

    document: dict[str, JsonValue]
    _sequence: int = 0

    def events(self) -> Iterator[bytes]:
        started = {**copy.deepcopy(self.document), "status": "in_progress", "output": []}
        started["usage"] = None
        yield self._event("response.created", response=started)
        yield self._event("response.in_progress", response=started)
        output = self.document.get("output")
        for index, item in enumerate(output if isinstance(output, list) else []):
            yield from self._item(index, json_object(item))
        ended = "response.incomplete" if self.document.get("status") == "incomplete" else None
        yield self._event(ended or "response.completed", response=self.document)

    def _item(self, index: int, item: JsonObject) -> Iterator[bytes]:
        added = {**item, "status": "in_progress"} if "status" in item else dict(item)
        kind = item.get("type")
        if kind == "message":
            added["content"] = []
        if kind == "function_call":
            added["arguments"] = ""
        yield self._event("response.output_item.added", output_index=index, item=added)
        where = {"item_id": item.get("id"), "output_index": index}
        if kind == "message":
            parts = item.get("content")
            for part_index, part in enumerate(parts if isinstance(parts, list) else []):
                yield from self._part(where, part_index, json_object(part))
        if kind == "function_call":
            arguments = item.get("arguments") or ""
            yield self._event("response.function_call_arguments.delta", **where, delta=arguments)
            yield self._event(
                "response.function_call_arguments.done",
                **where,
                name=item.get("name"),
                arguments=arguments,
            )
        yield self._event("response.output_item.done", output_index=index, item=item)

    def _part(self, where: JsonObject, index: int, part: JsonObject) -> Iterator[bytes]:
        at = {**where, "content_index": index}
        kind = part.get("type")
        if kind == "output_text":
            empty: JsonObject = {**part, "text": ""}
            if "annotations" in part:
                empty["annotations"] = []
            whole = part.get("text") or ""
            yield self._event("response.content_part.added", **at, part=empty)
            yield self._event("response.output_text.delta", **at, delta=whole, logprobs=[])
            yield self._event("response.output_text.done", **at, text=whole, logprobs=[])
        elif kind == "refusal":
            whole = part.get("refusal") or ""
            yield self._event("response.content_part.added", **at, part={**part, "refusal": ""})
            yield self._event("response.refusal.delta", **at, delta=whole)
            yield self._event("response.refusal.done", **at, refusal=whole)
        else:
            yield self._event("response.content_part.added", **at, part=part)
        yield self._event("response.content_part.done", **at, part=part)

    def _event(self, kind: str, **members: Any) -> bytes:
        event = {"type": kind, "sequence_number": self._sequence, **members}
        self._sequence += 1
        return _sse.named_event(event)


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []
