"""The one interface every model wire API is reached through, and the values it trades in.

A `ModelApi` is an adapter for one wire protocol (OpenAI Chat Completions,
OpenAI Responses, Anthropic Messages). The model recorder, model replay, the
cost of an exchange and the proxy's routes hold an adapter and call it; none
of them asks which provider is behind it. Adding an API is adding an adapter.

    parse        the body a client sent -> ModelRequest (or InvalidModelRequest)
    canonical    the request as it is recorded and matched under replay
    answer       a whole answer body -> the ModelAnswer that is recorded
    assembler    reads a streamed (SSE) answer, line by line, into that same ModelAnswer
    served_whole a recorded answer as this API's response body
    served_stream a recorded answer as this API's SSE events
    usage, reported_model   what an answer says it cost and which model gave it
    single_turn, answer_text   a one-turn request (system text, one user message) and the
                 text of its answer: what a judge asks and reads (engine/eval_runs/judging.py)
    error_body, error_fields   this API's error shape, written and read
    egress_headers   the real key in this API's header, added at egress only
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import JsonValue

ApiName = Literal["chat", "responses", "messages"]
"""`chat`: OpenAI Chat Completions; `responses`: OpenAI Responses; `messages`: Anthropic
Messages. Recorded with every exchange (`model_calls.api`)."""

Provider = Literal["openai", "anthropic"]
"""Whose upstream (base URL and key) an API's requests go to."""


class InvalidModelRequest(ValueError):
    """The body is not a request of this API; the message says why, for the client."""


@dataclass(frozen=True)
class ModelRequest:
    """A request body of one wire API and how its answer travels."""

    api: ModelApi
    body: dict[str, JsonValue]
    """As sent upstream; the key travels in a header and is never part of it."""
    stream: bool = False
    """The caller asked for its answer as SSE events (`stream: true`)."""

    @property
    def model(self) -> str | None:
        model = self.body.get("model")
        return model if isinstance(model, str) else None

    def canonical(self) -> dict[str, JsonValue]:
        """The request as it is recorded and matched (`ModelApi.canonical`)."""
        return self.api.canonical(self.body)


@dataclass(frozen=True)
class ModelAnswer:
    """An answer as it is recorded and replayed; its shape is its API's (`ModelApi.answer`)."""

    document: dict[str, JsonValue]


@dataclass(frozen=True, slots=True)
class Usage:
    """The tokens an answer reports: input (prompt) and output (completion)."""

    input_tokens: int
    output_tokens: int


class StreamAssembler(Protocol):
    """Reads an answer's SSE lines, as relayed, into the whole answer they add up to."""

    def feed(self, line: str) -> None:
        """One line of the stream (`event: …`, `data: …` or blank), without its newline."""
        ...

    @property
    def complete(self) -> bool:
        """The stream carried the whole answer."""
        ...

    def answer(self) -> ModelAnswer:
        """The whole answer; only once `complete`."""
        ...


class ModelApi(ABC):
    """One model wire API (see the module docstring for what each member does)."""

    name: ApiName
    provider: Provider
    upstream_path: str
    """Appended to the provider's base URL (`/chat/completions` after OpenAI's `…/v1`)."""
    transport_keys: frozenset[str]
    """Request keys that change how an answer travels, never what it says: a request
    recorded streamed matches the same request made whole."""

    def parse(self, body: object) -> ModelRequest:
        """A client's decoded JSON body as this API's request; raises InvalidModelRequest."""
        if not isinstance(body, dict):
            raise InvalidModelRequest("The request body must be a JSON object.")
        self.check(body)
        return ModelRequest(self, body, stream=body.get("stream") is True)

    @abstractmethod
    def check(self, body: dict[str, Any]) -> None:
        """Refuse (InvalidModelRequest) a body without what this API requires."""

    def canonical(self, body: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
        """The request as recorded and matched: the body without its transport keys."""
        return {key: value for key, value in body.items() if key not in self.transport_keys}

    @abstractmethod
    def answer(self, body: Mapping[str, Any]) -> ModelAnswer:
        """A whole answer body as recorded; raises ValueError for one that is not an answer.
        The answer may hold `body`'s own values: a caller hands over a body it keeps no use
        of (a freshly decoded one; an assembler, a copy of its state)."""

    @abstractmethod
    def assembler(self) -> StreamAssembler: ...

    @abstractmethod
    def served_whole(self, answer: ModelAnswer) -> dict[str, JsonValue]:
        """A recorded answer as this API's response body."""

    @abstractmethod
    def served_stream(self, answer: ModelAnswer, request: ModelRequest) -> Iterator[bytes]:
        """A recorded answer as the SSE events this API's server sends for `request`."""

    @abstractmethod
    def usage(self, answer: ModelAnswer) -> Usage | None:
        """The tokens the answer reports; None when it reports none."""

    @abstractmethod
    def single_turn(
        self, model: str, system: str, user: str, *, max_tokens: int, temperature: float
    ) -> dict[str, JsonValue]:
        """A one-turn request body of this API: `system` as its instructions, `user` as the
        one user message."""

    @abstractmethod
    def answer_text(self, answer: ModelAnswer) -> str | None:
        """The text an answer carries (its text parts joined); None when it has none."""

    def reported_model(self, answer: ModelAnswer) -> str | None:
        model = answer.document.get("model")
        return model if isinstance(model, str) else None

    @abstractmethod
    def error_body(self, status: int, message: str, code: str) -> dict[str, JsonValue]:
        """An error of the host's own (a miss, no upstream) in this API's shape."""

    @abstractmethod
    def error_fields(self, body: object) -> dict[str, JsonValue]:
        """The `type` (and `code`) of an upstream's error body, never its message (which may
        quote part of a key)."""

    @abstractmethod
    def egress_headers(self, key: str | None, sent: Mapping[str, str]) -> dict[str, str]:
        """The upstream request's headers: the real key (None: the server needs none) and
        what of the client's own headers (`sent`) this API forwards."""


def integer(value: object) -> int | None:
    """A token count as an API reports it: an int, never a bool."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def json_object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
