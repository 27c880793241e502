"""Asking a rubric task's judge (RFC 0081 §A rubric, §D; docs/graders.md, "The judge").

The judge is asked through the same model boundary as the agents: a
`ModelRecorder` records the exchange beside the trial's other model calls
(request, answer, tokens, latency, cost at the project's prices; via `judge`,
as agent `judge:<id>`), and its cost counts into the trial's, so into the
run's `totalCostUsd` and its `maxCostUsd` bar.

A judge is asked only what it has never judged (docs/graders.md, "Its replay"):
the request is canonical (the API adapter's canonical body, hashed as every
model request is), and the judge source's recorded judgements — by default the
baseline run's — answer an identical request without a call. A request they do
not answer goes to the judge; on a host that must not call out (`--offline`,
`--replay-model`) it is recorded as a miss and the trial is *unjudged*.

The rules (prompt, reading the answer, weights, threshold, the reason) are
pure functions in evals/_rubric.py; this module does the I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import httpx
from pydantic import JsonValue

from wopeval import evals
from wopeval.agents import Refusal, retried, status_refusal, transport_refusal
from wopeval.engine.catalog.judges import Judge
from wopeval.engine.recording.models import ModelLedger, ModelRecorder, ModelServer
from wopeval.engine.runlog.runlog import Journal
from wopeval.models import (
    LiveAnswer,
    ModelAnswer,
    ModelCallFailed,
    ModelReplayMiss,
    ModelRequest,
)
from wopeval.wire import ids
from wopeval.wire.suite import Task
from wopeval.wire.summary import Advisory


def judge_agent_id(judge_id: str) -> str:
    """Whose exchanges a judge's are in `model_calls` (never an agent's: `judge:` is no id
    an agent may take)."""
    return f"judge:{judge_id}"


@dataclass(frozen=True)
class JudgePlan:
    """The eval run's judge, resolved at create."""

    judge: Judge
    recorded: tuple[evals.ModelFixture, ...] = ()
    """The judge source's recorded judgements (its answered judge exchanges)."""
    source_run_id: str | None = None
    live: bool = True
    """False (`--offline`, `--replay-model`): a judgement no recording holds is not asked."""
    advisory: Advisory | None = None
    """Why the judge may not gate this run (engine/eval_runs/calibration.py); None: it gates."""


async def judge_trial(
    plan: JudgePlan,
    task: Task,
    decision: JsonValue,
    journal: Journal,
    ledger: ModelLedger,
    prices: Mapping[str, evals.ModelPrice],
) -> evals.Grade:
    """The trial's grade by its judge; every exchange recorded into `ledger` (its index
    there is the criterion grades' `exchange`)."""
    judge, rubric = plan.judge, task.expected.rubric or []
    rules = judge.rules
    system = evals.judge_prompt(rules.template, rubric, rules.scale, task.input)
    body = judge.api.single_turn(
        rules.model,
        system,
        evals.judged_output(decision),
        max_tokens=judge.max_tokens,
        temperature=judge.temperature,
    )
    request = ModelRequest(judge.api, body)
    request_hash = evals.model_request_hash(request.canonical())
    served = any(f.request_hash == request_hash for f in plan.recorded)
    replay = None
    if served or not plan.live:
        # A fresh cursor per judgement: an identical request is answered whatever else the
        # task's trials asked (a judgement depends on its request alone).
        replay = ModelServer(evals.ModelReplayCursor(plan.recorded))
    recorder = ModelRecorder(
        agent_id=judge_agent_id(rules.judge_id),
        record_model=True,
        invocation_id=ids.mint_local_id(),
        is_delegate=False,
        journal=journal,
        ledger=ledger,
        prices=prices,
        replay=replay,
    )
    exchange = len(ledger.exchanges)
    try:
        answer = await recorder.call(request, lambda: _ask(judge, request), via="judge")
    except ModelReplayMiss:
        # Recorded as a miss (with the nearest recorded judgement); the runner counted the
        # agent's misses before the judge was asked, so it is none of the agent's.
        source = plan.source_run_id or "no judge source"
        why = f"no recorded judgement for this request ({source}) and this run calls no judge"
        return evals.unjudged_grade(rules, rubric, why, exchange)
    except ModelCallFailed as failure:
        return evals.unjudged_grade(rules, rubric, f"the judge {failure}", exchange)
    try:
        judged = evals.read_judgement(judge.api.answer_text(answer), rubric, rules.scale)
    except evals.JudgementUnreadable as unreadable:
        return evals.unjudged_grade(rules, rubric, str(unreadable), exchange)
    return evals.rubric_grade(rules, rubric, judged, exchange)


async def _ask(judge: Judge, request: ModelRequest) -> LiveAnswer:
    api, endpoint = judge.api, judge.endpoint
    key = None if endpoint.api_key is None else endpoint.api_key()
    headers = {"Accept": "application/json", **api.egress_headers(key, {})}
    url = endpoint.base_url + api.upstream_path

    async def send() -> ModelAnswer:
        response = await judge.http.post(
            url, json=request.body, headers=headers, timeout=judge.timeout_seconds
        )
        if response.status_code >= 400:
            raise _Refused(response)
        try:
            return api.answer(response.json())
        except ValueError:
            raise ModelCallFailed(
                f"the judge's answer is not a {api.name} answer", {"code": "malformed"}
            ) from None

    def refused(exc: Exception) -> Refusal | None:
        if isinstance(exc, _Refused):
            fields = api.error_fields(_json(exc.response))
            retry_after = exc.response.headers.get("retry-after")
            return status_refusal(exc.response.status_code, fields, retry_after)
        if isinstance(exc, httpx.HTTPError):
            return transport_refusal(exc, isinstance(exc, httpx.TimeoutException))
        return None

    return await retried(send, refused, judge.retries, endpoint.base_url)


class _Refused(Exception):
    def __init__(self, response: httpx.Response) -> None:
        super().__init__(response.status_code)
        self.response = response


def _json(response: httpx.Response) -> object:
    try:
        return response.json()
    except ValueError:
        return None


def judge_fixtures(
    exchanges: Sequence[evals.RecordedExchange], judge_id: str
) -> tuple[evals.ModelFixture, ...]:
    """A judge source's recorded judgements: the judge's answered exchanges whose answer is
    still held (an erased one answers nothing: the judge is asked again)."""
    fixtures = evals.derive_model_fixtures(exchanges, judge_agent_id(judge_id))
    return tuple(f for f in fixtures if isinstance(f.response, dict))
