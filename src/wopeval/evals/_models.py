"""Model exchanges as rules: the request's identity, replay fixtures, and what a call cost.

Model replay is this host's extension beyond RFC 0252 UQ 5 (which leaves an
agent's model calls live): an eval task that takes its tool fixtures from a
source run may also take that source's recorded model answers. A request is
matched on `model_request_hash` — the RFC 8785 canonical JSON of the request
body without its transport keys — and each recorded answer serves one
request, in recording order, afresh at each trial (like the fixture matcher).
A request the source never made is a miss and reaches no upstream.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import JsonValue

from wopeval.evals._canonical import args_hash

TRANSPORT_KEYS = frozenset({"stream", "stream_options"})
"""Request keys that change how an answer travels, never what it says: a request recorded
streamed matches the same request made without streaming."""

ModelServedBy = Literal["live", "replay", "miss"]
"""How an exchange was answered: the upstream, a recorded answer, or nothing (a miss)."""


def canonical_model_request(body: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    """The request as it is recorded and matched: the body without its transport keys."""
    return {key: value for key, value in body.items() if key not in TRANSPORT_KEYS}


def model_request_hash(body: Mapping[str, JsonValue]) -> str:
    """`sha256:` + hex of the JCS of the canonical request (messages, tools, parameters)."""
    return args_hash(canonical_model_request(body))


@dataclass(frozen=True, slots=True)
class RecordedExchange:
    """One model exchange as the host recorded it (`model_calls`)."""

    invocation_id: str
    agent_id: str
    is_delegate: bool
    ordinal: int
    """Its position among the invocation's exchanges, from 0."""
    request_hash: str
    status: Literal["ok", "error"]
    response: JsonValue
    """The normalised answer (`content`, `toolCalls`, `finishReason`, `model`, `usage`)."""


@dataclass(frozen=True, slots=True)
class ModelFixture:
    """A recorded answer served to the request with the same hash."""

    request_hash: str
    response: JsonValue

    def to_json(self) -> dict[str, JsonValue]:
        return {"requestHash": self.request_hash, "response": self.response}

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> ModelFixture:
        return cls(str(document["requestHash"]), document["response"])


def derive_model_fixtures(
    exchanges: Iterable[RecordedExchange], agent_id: str
) -> list[ModelFixture]:
    """The agent's own answered exchanges (delegates and failed attempts left out), in order.

    A failed exchange (a 429, a 500) is left out: its retry is the exchange that
    answered, and a replay has no upstream to wait for.
    """
    return [
        ModelFixture(exchange.request_hash, exchange.response)
        for exchange in exchanges
        if exchange.agent_id == agent_id and not exchange.is_delegate and exchange.status == "ok"
    ]


@dataclass
class ModelReplayCursor:
    """Serves recorded answers for one task: each once, the first unconsumed with the
    request's hash; consumption starts afresh at each trial."""

    fixtures: Sequence[ModelFixture]
    _consumed: set[int] = field(default_factory=set)
    miss_count: int = 0

    def reset(self) -> None:
        self._consumed = set()
        self.miss_count = 0

    def serve(self, request_hash: str) -> ModelFixture | None:
        """The answer for the request, consumed; None is a miss (counted)."""
        for index, fixture in enumerate(self.fixtures):
            if index not in self._consumed and fixture.request_hash == request_hash:
                self._consumed.add(index)
                return fixture
        self.miss_count += 1
        return None


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """A model's price (the project's `[models."<id>"]` table), in USD per million tokens."""

    input_per_mtok: float
    output_per_mtok: float


def exchange_cost(
    prices: Mapping[str, ModelPrice],
    *,
    reported_model: str | None,
    requested_model: str | None,
    prompt_tokens: int,
    completion_tokens: int,
) -> float | None:
    """What an exchange cost: its tokens at the price of the model the upstream reported,
    else of the model requested; None when neither has a price."""
    for model in (reported_model, requested_model):
        price = prices.get(model) if model else None
        if price is not None:
            return (
                prompt_tokens * price.input_per_mtok + completion_tokens * price.output_per_mtok
            ) / 1_000_000
    return None
