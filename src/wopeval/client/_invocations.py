"""A run's invocations and what their agents said, read from the host's invocation routes.

The routes are this host's (`/host/wopeval/runs/…/invocations`); another OpenWOP
host may not serve them, and then `fetch_invocations` answers None.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from wopeval.client._wire import WireClient
from wopeval.wire.invocations import InvocationLine


@dataclass(frozen=True)
class RunInvocations:
    lines: list[InvocationLine]
    said: dict[str, str] = field(default_factory=dict)
    """What the agents of the invocations asked for said, by invocation id."""


def fetch_invocations(
    host: WireClient, run_id: str, wanted: Callable[[InvocationLine], bool]
) -> RunInvocations | None:
    """The run's invocations, with what the agent said for each `wanted` one that said
    something the host may show."""
    listed = host.invocations(run_id)
    if listed is None:
        return None
    lines = listed.invocations
    said: dict[str, str] = {}
    for line in lines:
        if line.stderr == "kept" and wanted(line):
            text = host.invocation_stderr(run_id, line.invocationId)
            if text.stderr:
                said[line.invocationId] = text.stderr
    return RunInvocations(lines, said)
