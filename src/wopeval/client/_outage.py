"""A model provider that did not answer: the eval judged the outage, not the agent.

An LLM agent's trial whose model could not be reached, timed out, or answered
429 or 5xx after its retries fails, and a verdict read from it would blame the
agent for the provider. `require_models_answered` finds such an exchange among
the failed trials' recorded model calls (the LLM lanes', the model proxy's and
a rubric judge's alike) and stops the command with what happened and what to
do: exit 4, "could not run" (docs/ci.md). `require_run_models_answered` does the
same for a workflow run's failed invocations, from the run's model exchanges
(`/host/wopeval/runs/{runId}/model-calls`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from wopeval.client._wire import ClientError, WireClient
from wopeval.wire.invocations import InvocationLine
from wopeval.wire.task_detail import ModelCallView, TaskDetail

_BASE_URL_VARIABLES = {"chat": "OPENAI_BASE_URL", "responses": "OPENAI_BASE_URL"}
"""The variable an agent's `base_url` falls back to, per wire API (Messages: Anthropic's)."""


class ModelUnavailable(ClientError):
    """A model exchange of the run got no usable answer from its provider."""


def provider_unavailable(error: Mapping[str, object]) -> bool:
    """A recorded exchange error that says the provider could not serve, whatever was asked:
    no connection, no answer in time, or a 429 or 5xx status (what the lanes retry)."""
    status = error.get("status")
    if isinstance(status, int):
        return status == 429 or status >= 500
    return error.get("code") in ("unreachable", "timeout")


def require_models_answered(host: WireClient, run_id: str) -> None:
    """ModelUnavailable naming the first failed trial whose provider did not answer.

    Only the tasks with a failed trial are read in detail: a trial that passed was
    answered. A host without the task routes is taken at its summary's word."""
    listing = host.task_list(run_id)
    if listing is None:
        return
    for line in listing.tasks:
        if line.passedTrials == line.trials:
            continue
        found = _first_outage(host.task_detail(run_id, line.taskId))
        if found is not None:
            trial, call = found
            where = f"run {run_id}, task {line.taskId}, trial {trial}"
            raise ModelUnavailable(_described(where, "nothing was judged", call))


def require_run_models_answered(
    host: WireClient, run_id: str, failed: Iterable[InvocationLine]
) -> None:
    """ModelUnavailable naming the first of the run's `failed` invocations whose last model
    exchange the provider did not answer (the last, as `_first_outage` says why). A host
    without the route is taken at its word that the run failed."""
    listing = host.model_calls(run_id)
    if listing is None:
        return
    last: dict[str, ModelCallView] = {}
    for call in listing.modelCalls:  # in the order they ended: an invocation's last wins
        last[call.invocationId] = call
    for line in failed:
        asked = last.get(line.invocationId)
        if asked is not None and _provider_down(asked):
            node = f"node {line.nodeId}" if line.nodeId else f"invocation {line.invocationId}"
            raise ModelUnavailable(_described(f"run {run_id}, {node}", "the run failed", asked))


def _first_outage(detail: TaskDetail) -> tuple[int, ModelCallView] | None:
    """The first failed trial whose last model exchange the provider did not answer. The
    last only: an agent on the model proxy retries with its own client, each attempt an
    exchange, and one that got its answer on a later attempt was not stopped by the provider
    (an LLM lane records an exchange once its retries are spent, and then ends)."""
    for trial in detail.trialDetails:
        if trial.passed or not trial.modelCalls:
            continue
        last = trial.modelCalls[-1]
        if _provider_down(last):
            return trial.trial, last
    return None


def _provider_down(call: ModelCallView) -> bool:
    return call.servedBy == "live" and call.error is not None and provider_unavailable(call.error)


def _described(where: str, outcome: str, call: ModelCallView) -> str:
    """Two lines: what the provider did, `where` (the run and what in it asked), the
    `outcome`; then what to do about it."""
    error = call.error or {}
    url = error.get("url")
    provider = f"model provider at {url}" if isinstance(url, str) else "the model provider"
    status = error.get("status")
    cause = error.get("cause")
    if isinstance(status, int):
        what, fix = (
            f"answered HTTP {status}",
            "It is failing or limiting requests: try again later.",
        )
    elif error.get("code") == "timeout":
        what, fix = "did not answer in time", "Is it overloaded, or timeout_seconds too short?"
    elif cause == "connection refused":
        what, fix = "refused the connection", "Is it running?"
    elif cause == "name not resolved":
        what, fix = "has a host name that does not resolve", "Is the URL right?"
    else:
        what, fix = "could not be reached", "Is it running, and reachable from here?"
    attempts = f", {call.attempts} attempts" if call.attempts > 1 else ""
    if call.agentId.startswith("judge:"):
        setting = f"set the base_url of judge {call.agentId.removeprefix('judge:')}"
    else:
        variable = _BASE_URL_VARIABLES.get(call.api, "ANTHROPIC_BASE_URL")
        setting = f"set agent {call.agentId}'s base_url (or {variable})"
    return (
        f"{provider} {what} ({where}{attempts}); {outcome}.\n"
        f"  {fix} Or {setting} in wopeval.toml to a server that answers."
    )
