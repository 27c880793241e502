"""Model exchanges as rules: the request's identity, replay fixtures, and what a call cost.

Model replay is this host's extension beyond RFC 0252 UQ 5 (which leaves an
agent's model calls live): an eval task that takes its tool fixtures from a
source run may also take that source's recorded model answers. A request is
matched on its wire API and `model_request_hash` — the RFC 8785 canonical JSON
of the request as its API canonicalises it (without its transport keys) — and
each recorded answer serves one request, in recording order, afresh at each
trial (like the fixture matcher). A request the source never made is a miss
and reaches no upstream; `_model_miss` says which recorded request it came
nearest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import JsonValue

from wopeval.evals._canonical import args_hash
from wopeval.evals._model_fixture import DEFAULT_API, ModelFixture
from wopeval.evals._model_miss import ModelMiss, nearest_request

ModelServedBy = Literal["live", "replay", "miss"]
"""How an exchange was answered: the upstream, a recorded answer, or nothing (a miss)."""


def model_request_hash(canonical: Mapping[str, JsonValue]) -> str:
    """`sha256:` + hex of the JCS of a canonical request (messages, tools, parameters): the
    body as its API canonicalises it (`ModelApi.canonical`)."""
    return args_hash(dict(canonical))


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
    """The answer as its API records it."""
    api: str = DEFAULT_API
    """The wire API it used (`chat`, `responses`, `messages`)."""
    request: JsonValue = None
    """The canonical request, which a miss is compared with."""


def derive_model_fixtures(
    exchanges: Iterable[RecordedExchange], agent_id: str
) -> list[ModelFixture]:
    """The agent's own answered exchanges (delegates and failed attempts left out), in order.

    A failed exchange (a 429, a 500) is left out: its retry is the exchange that
    answered, and a replay has no upstream to wait for.
    """
    return [
        ModelFixture(
            exchange.request_hash,
            exchange.response,
            exchange.api,
            exchange.request,
            exchange.ordinal,
        )
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

    def serve(self, api: str, request_hash: str) -> ModelFixture | None:
        """The answer for the request, consumed; None is a miss (counted)."""
        for index, fixture in enumerate(self.fixtures):
            if (
                index not in self._consumed
                and fixture.api == api
                and fixture.request_hash == request_hash
            ):
                self._consumed.add(index)
                return fixture
        self.miss_count += 1
        return None

    def nearest(self, api: str, request: JsonValue, ordinal: int, *, index: int) -> ModelMiss:
        """What a request that missed came nearest (`_model_miss.nearest_request`)."""
        consumed = frozenset(self._consumed)
        return nearest_request(self.fixtures, consumed, api, request, ordinal, index)


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
