"""The model boundary of an invocation: every model exchange recorded as executed.

The LLM lanes and the model proxy (the per-invocation endpoint of command
and http agents) hand each exchange to the same `ModelRecorder`, whatever its
wire API: the request says which (`ModelRequest.api`), and the recorder asks
that adapter to canonicalise it and to read the answer's usage and model —
it never asks which provider is behind it. Under model replay it answers from
a recording — failing closed on a request the source never made, which then
reaches no upstream, and naming the recorded request it came nearest — or it
asks the upstream; either way it records one row per exchange beside the tool
calls: its API, the request as sent (never the key), the answer, usage
tokens, latency, attempts, the model id reported and its cost at the
project's prices. Rows land with their unit of work (node or trial): a model
answer has no effect on the world, so it needs no landing of its own.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

from wopeval import evals
from wopeval.engine.runlog.runlog import Journal
from wopeval.engine.runlog.steps import now
from wopeval.models import (
    ApiName,
    LiveModelCall,
    ModelAnswer,
    ModelCallFailed,
    ModelReplayMiss,
    ModelRequest,
    Usage,
)
from wopeval.store import TOKEN_COUNT_MAX, ModelCallRow, ModelVia


class ModelServer:
    """Serves recorded answers to one eval task's model requests (model replay)."""

    def __init__(self, cursor: evals.ModelReplayCursor) -> None:
        self._cursor = cursor

    def serve(self, api: ApiName, request_hash: str) -> ModelAnswer | None:
        fixture = self._cursor.serve(api, request_hash)
        if fixture is None or not isinstance(fixture.response, dict):
            return None
        return ModelAnswer(dict(fixture.response))

    def nearest(
        self, api: ApiName, request: JsonValue, ordinal: int, *, index: int
    ) -> evals.ModelMiss:
        return self._cursor.nearest(api, request, ordinal, index=index)


@dataclass
class ModelLedger:
    """The exchanges of an invocation (and its delegates) for its trial's detail."""

    exchanges: list[dict[str, Any]] = field(default_factory=list)
    misses: int = 0

    def cost_usd(self) -> float | None:
        """What the live exchanges cost at the project's prices; None when none is priced."""
        costs = [e["costUsd"] for e in self.exchanges if e.get("costUsd") is not None]
        return sum(costs) if costs else None


@dataclass
class ModelRecorder:
    """One invocation's door to its model: replayed, or live and recorded."""

    agent_id: str
    """Whose exchanges: an agent's id, or a judge's (`judge:<id>`, docs/graders.md)."""
    record_model: bool
    """Keep the exchanges' content (`record_model`; a judge's is always kept)."""
    invocation_id: str
    is_delegate: bool
    journal: Journal
    ledger: ModelLedger
    prices: Mapping[str, evals.ModelPrice]
    replay: ModelServer | None = None
    _ordinal: int = 0

    @property
    def exchange_count(self) -> int:
        """The invocation's exchanges so far, whatever their answer."""
        return self._ordinal

    async def call(
        self, request: ModelRequest, live: LiveModelCall, *, via: ModelVia = "lane"
    ) -> ModelAnswer:
        """The answer to `request`: from the recording under replay, else from `live()`."""
        replayed = self.replayed(request, via=via)
        if replayed is not None:
            return replayed
        started = time.perf_counter()
        try:
            outcome = await live()
        except ModelCallFailed as failure:
            self.record(request, None, _elapsed(started), via=via, failure=failure)
            raise
        self.record(request, outcome.answer, _elapsed(started), via=via, attempts=outcome.attempts)
        return outcome.answer

    def replayed(self, request: ModelRequest, *, via: ModelVia) -> ModelAnswer | None:
        """Under model replay: the recorded answer (recorded as served), or ModelReplayMiss
        (recorded as a miss, with the nearest recorded request and the diff). None: no
        replay here, the caller asks the upstream."""
        if self.replay is None:
            return None
        api = request.api.name
        canonical = request.canonical()
        answer = self.replay.serve(api, evals.model_request_hash(canonical))
        if answer is None:
            # Matched by its place in the invocation, named by its place in the trial: the
            # number the task detail, explain and the dashboard show for this exchange.
            index = len(self.ledger.exchanges)
            miss = self.replay.nearest(api, canonical, self._ordinal, index=index)
            self.ledger.misses += 1
            error = {"code": "model_replay_miss", **miss.to_json()}
            self._add(request, None, 0, via=via, served_by="miss", attempts=0, error=error)
            raise ModelReplayMiss(miss.described())
        self._add(request, answer, 0, via=via, served_by="replay", attempts=0)
        return answer

    def record(
        self,
        request: ModelRequest,
        answer: ModelAnswer | None,
        latency_ms: int,
        *,
        via: ModelVia,
        attempts: int = 1,
        failure: ModelCallFailed | None = None,
    ) -> None:
        """Record a live exchange: its answer, or the failure it ended in."""
        if failure is not None:
            attempts = failure.attempts
        error = None if failure is None else {"reason": str(failure), **failure.error}
        self._add(
            request, answer, latency_ms, via=via, served_by="live", attempts=attempts, error=error
        )

    def _add(
        self,
        request: ModelRequest,
        answer: ModelAnswer | None,
        latency_ms: int,
        *,
        via: ModelVia,
        served_by: evals.ModelServedBy,
        attempts: int,
        error: dict[str, JsonValue] | None = None,
    ) -> None:
        api = request.api
        body = request.canonical()
        usage = api.usage(answer) if answer is not None else None
        if usage is not None and not _kept(usage):
            # A count a server may report (JSON has no size limit) that no token column
            # holds: its insert failed and the run with it. The exchange is kept without a
            # count or a cost, as one reporting none; its answer keeps what it said.
            usage = None
        reported = api.reported_model(answer) if answer is not None else None
        cost = None
        if served_by == "live" and usage is not None:
            cost = evals.exchange_cost(
                self.prices,
                reported_model=reported,
                requested_model=request.model,
                prompt_tokens=usage.input_tokens,
                completion_tokens=usage.output_tokens,
            )
        keep = self.record_model
        row = ModelCallRow(
            invocation_id=self.invocation_id,
            ordinal=self._ordinal,
            agent_id=self.agent_id,
            is_delegate=self.is_delegate,
            api=api.name,
            via=via,
            served_by=served_by,
            status="ok" if answer is not None else "error",
            request_hash=evals.model_request_hash(body),
            model=request.model,
            response_model=reported,
            stream=request.stream,
            attempts=attempts,
            latency_ms=latency_ms,
            prompt_tokens=None if usage is None else usage.input_tokens,
            completion_tokens=None if usage is None else usage.output_tokens,
            cost_usd=cost,
            at=now(),
            recorded=keep,
            request=body if keep else None,
            response=answer.document if keep and answer is not None else None,
            error=error,
        )
        self._ordinal += 1
        self.journal.record_model_call(row)
        response = None if answer is None else answer.document
        self.ledger.exchanges.append(exchange_detail(row, body, response))


def exchange_detail(row: ModelCallRow, request: JsonValue, response: JsonValue) -> dict[str, Any]:
    """The exchange as a trial's detail keeps it and a run's listing reads it back from the
    store (shown through `content.trial_view` and `content.run_model_call`); `request` and
    `response` are its content (a trial keeps it whole, the store only when `recorded`)."""
    return {
        "agentId": row.agent_id,
        "delegate": row.is_delegate,
        "api": row.api,
        "via": row.via,
        "servedBy": row.served_by,
        "status": row.status,
        "model": row.model,
        "responseModel": row.response_model,
        "stream": row.stream,
        "attempts": row.attempts,
        "latencyMs": row.latency_ms,
        "promptTokens": row.prompt_tokens,
        "completionTokens": row.completion_tokens,
        "costUsd": row.cost_usd,
        "requestHash": row.request_hash,
        "request": request,
        "response": response,
        "error": row.error,
    }


def _elapsed(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)


def _kept(usage: Usage) -> bool:
    """Whether the token columns hold both of `usage`'s counts."""
    least = -TOKEN_COUNT_MAX - 1
    return bool(
        least <= usage.input_tokens <= TOKEN_COUNT_MAX
        and least <= usage.output_tokens <= TOKEN_COUNT_MAX
    )
