"""Idle recordings: an agent whose run recorded nothing a replay could test.

A run is a regression test only through what its agent did at the
boundaries: the tool calls a replay serves from the recording and the model
exchanges it can replay. An agent that made no tool call, or that was handed
the recording model proxy and made no model call through it, recorded none of
that: its framework may have dropped the tools, or talked to its model
around the proxy. Such a run is flagged when it ends and kept out of suites
made from runs unless asked for (docs/recordings.md, "Idle runs"); an eval
task whose agent made no model call where its source run made some says so
in its reason (docs/why.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

IdleReason = Literal["no_tool_calls", "no_model_calls"]

_PHRASES: dict[str, str] = {
    "no_tool_calls": "made no tool call",
    "no_model_calls": "made no model call though it was handed the model proxy",
}


def idle_reasons(
    *, tool_calls: int, model_calls: int, model_proxy_handed: bool
) -> tuple[IdleReason, ...]:
    """Why an invocation that completed recorded nothing a replay could test (docs/recordings.md).

    `tool_calls` and `model_calls` count the agent's own (not its delegates');
    a model exchange counts whatever its answer, as it reached the boundary.
    """
    reasons: list[IdleReason] = []
    # "an agent that made no tool call": a replay would serve it nothing.
    if tool_calls == 0:
        reasons.append("no_tool_calls")
    # "or that was handed the recording model proxy and made no model call through it".
    if model_proxy_handed and model_calls == 0:
        reasons.append("no_model_calls")
    return tuple(reasons)


def describe_idle(agent_id: str, reasons: Sequence[str]) -> str:
    """One line: `agent A made no tool call and made no model call though …`."""
    # A reason this host does not know (a newer host's) is shown as it was written.
    phrases = [_PHRASES.get(reason, reason) for reason in reasons]
    return f"agent {agent_id} " + " and ".join(phrases)


def missing_model_calls(source_model_calls: int | None, model_calls: int) -> str | None:
    """The note an eval trial's reason carries when its agent made no model call where its
    fixture source made some (docs/why.md); None when there is nothing to say.

    `source_model_calls` is None when the task has no source run (nothing to compare).
    """
    # "an eval task whose agent made no model call where its source run made some".
    if source_model_calls is None or source_model_calls == 0 or model_calls > 0:
        return None
    calls = "call" if source_model_calls == 1 else "calls"
    return (
        f"the agent made no model call where its source run made {source_model_calls} model {calls}"
    )
