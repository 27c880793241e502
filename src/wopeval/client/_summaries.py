"""Eval summaries as a client reads them, and the paired verdict when the host gives none.

`wopeval.evals` (and SciPy behind it) is imported inside the functions that
judge, so a command that only lists or reads starts without it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, JsonValue, ValidationError

from wopeval.client._request import REVISION_KEY
from wopeval.client._wire import ClientError, WireClient
from wopeval.reports import BaselineFacts, RunFacts
from wopeval.wire.summary import EvalSummary, Regression, TaskRegression, TaskSummary

DEFAULT_ALPHA = 0.05
"""`evals.DEFAULT_ALPHA`, restated so the CLI's defaults need not import the evals package
(a unit test keeps the two equal)."""


def summary_from_wire(data: dict[str, Any]) -> EvalSummary:
    """Read an EvalSummary, ignoring members this client does not know (as the SDK does).

    Another host may add its own members; the closed model would refuse them,
    and refusing a whole summary over an extra key would help nobody.
    """
    body = _known(EvalSummary, data)
    body["tasks"] = [_known(TaskSummary, t) for t in data.get("tasks") or []]
    if isinstance(data.get("regression"), dict):
        regression = _known(Regression, data["regression"])
        if isinstance(regression.get("tasks"), list):
            regression["tasks"] = [_known(TaskRegression, t) for t in regression["tasks"]]
        body["regression"] = regression
    try:
        return EvalSummary.model_validate(body)
    except ValidationError as exc:
        raise ClientError(
            f"the host's eval summary is not one this client can read: {exc}"
        ) from None


def _known(model: type[BaseModel], data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        return {}
    return {key: value for key, value in data.items() if key in model.model_fields}


def fetch_summary(client: WireClient, run_id: str) -> EvalSummary:
    return summary_from_wire(client.eval_summary(run_id))


def ensure_verdict(
    client: WireClient, summary: EvalSummary, *, alpha: float = DEFAULT_ALPHA
) -> EvalSummary:
    """The summary with a paired verdict: the host's, else computed here from both summaries.

    A host advertising `regressionVerdict` computes it (RFC 0244 §F); for one
    that reports only `baselineRunId` and `scoreDelta`, the client pairs the
    two served summaries itself with the same function.
    """
    if summary.regression is None or summary.regression.verdict is not None:
        return summary
    from wopeval import evals

    baseline_id = summary.regression.baselineRunId
    return evals.with_regression(summary, baseline_id, fetch_summary(client, baseline_id), alpha)


def compare_runs(
    client: WireClient,
    baseline_run_id: str,
    candidate_run_id: str,
    *,
    alpha: float = DEFAULT_ALPHA,
) -> EvalSummary:
    """The candidate's summary, re-judged against `baseline_run_id` (RFC 0244 §F pairing).

    Two runs of different suiteIds have no tasks in common by definition
    (RFC 0251 §C matches baselines on suiteId), so that is refused.
    """
    baseline = fetch_summary(client, baseline_run_id)
    candidate = fetch_summary(client, candidate_run_id)
    if baseline.suiteId != candidate.suiteId:
        raise ClientError(
            f"the runs evaluated different suites ({baseline.suiteId} and "
            f"{candidate.suiteId}); only runs of one suiteId can be compared"
        )
    from wopeval import evals

    return evals.with_regression(candidate, baseline_run_id, baseline, alpha)


def run_facts(client: WireClient, run_id: str) -> RunFacts:
    """The report header: snapshot fields, the eval.started facts, the agent, the revision,
    the baseline's tags and age, live calls."""
    snapshot = client.get_run(run_id)
    # `eval.started` is the run's second event: the first page holds it.
    events = client.poll_events(run_id, wait_seconds=1).events
    started = next((e.payload for e in events if e.type == "eval.started"), None)
    if not isinstance(started, dict):
        started = {}
    agents = _strings(snapshot.extension("wopeval.run").get("agentIds"))
    baseline_id = started.get("baselineRunId")
    fixture_runs = started.get("fixtureRuns")
    revision = (snapshot.metadata or {}).get(REVISION_KEY)
    return RunFacts(
        run_id=run_id,
        status=snapshot.status,
        agent_id=agents[0] if agents else None,
        started_at=snapshot.startedAt,
        completed_at=snapshot.completedAt,
        modes=tuple(_strings(started.get("modes"))),
        fixture_runs={
            task: str(source)
            for task, source in (fixture_runs if isinstance(fixture_runs, dict) else {}).items()
        },
        live_calls=client.live_calls(run_id),
        tags=tuple(snapshot.tags or ()),
        revision=revision if isinstance(revision, str) else None,
        baseline=baseline_facts(client, str(baseline_id)) if baseline_id else None,
    )


def _strings(value: JsonValue) -> list[str]:
    """A JSON array of strings as the host sent it; anything else: none."""
    return [str(item) for item in value] if isinstance(value, list) else []


def baseline_facts(client: WireClient, run_id: str) -> BaselineFacts:
    """How a report names the baseline: its id, its tags, when it completed."""
    base = client.get_run(run_id)
    return BaselineFacts(
        run_id=base.runId, tags=tuple(base.tags or ()), completed_at=base.completedAt
    )
