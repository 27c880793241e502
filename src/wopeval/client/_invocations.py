"""A run's invocations and what their agents said, read from the host's invocation routes.

The routes are this host's (`/host/wopeval/runs/…/invocations`); another OpenWOP
host may not serve them, and then `fetch_invocations` answers None.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import ValidationError

from wopeval.client._wire import ClientError, WireClient
from wopeval.wire.invocations import InvocationLine, InvocationList, InvocationStderr
from wopeval.wire.suite import error_pointer

Shape = TypeVar("Shape", InvocationList, InvocationStderr)


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
    body = host.invocations(run_id)
    if body is None:
        return None
    lines = _read(InvocationList, body).invocations
    said: dict[str, str] = {}
    for line in lines:
        if line.stderr == "kept" and wanted(line):
            text = _read(InvocationStderr, host.invocation_stderr(run_id, line.invocationId))
            if text.stderr:
                said[line.invocationId] = text.stderr
    return RunInvocations(lines, said)


def _read(shape: type[Shape], body: dict[str, Any]) -> Shape:
    try:
        return shape.model_validate(body)
    except ValidationError as exc:
        problems = "; ".join(f"{error_pointer(e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ClientError(
            f"the host's invocations are not a shape this client reads: {problems}"
        ) from None
