"""What of an invocation leaves the host (engine/recording/content.py): what its agent said
only under `wireContent: full`, and nothing of it for an agent the host no longer has."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from wopeval.agents import WireContent
from wopeval.engine.recording.content import invocation_line, invocation_stderr
from wopeval.store import InvocationSaid, StoredInvocation

AT = datetime(2026, 12, 2, 1, 2, 3, 45000, tzinfo=UTC)
STORED = StoredInvocation(
    invocation_id="i-1",
    agent_id="a",
    is_delegate=False,
    node_id="agent",
    task_id=None,
    trial=None,
    outcome="failed",
    error={"type": "AgentFailed", "message": "the agent's process exited with status 1",
           "traceback": "Traceback …"},
    started_at=AT,
    completed_at=AT,
    idle=None,
    said_something=True,
)  # fmt: skip


def test_a_full_agents_invocation_shows_its_error_and_what_it_said() -> None:
    line = invocation_line(STORED, "full")
    assert line.model_dump(exclude_none=True) == {
        "invocationId": "i-1",
        "agentId": "a",
        "delegate": False,
        "nodeId": "agent",
        "outcome": "failed",
        "startedAt": "2026-12-02T01:02:03.045Z",
        "completedAt": "2026-12-02T01:02:03.045Z",
        "error": {"type": "AgentFailed", "message": "the agent's process exited with status 1"},
        "stderr": "kept",
    }
    said = invocation_stderr("r", InvocationSaid("i-1", "a", "it said"), "full")
    assert (said.stderr, said.withheld) == ("it said", False)


@pytest.mark.parametrize("mode", ["hash", None])
def test_otherwise_what_it_said_is_withheld(mode: WireContent | None) -> None:
    line = invocation_line(STORED, mode)
    assert line.stderr == "withheld"
    assert line.error is not None
    assert line.error.message is None
    said = invocation_stderr("r", InvocationSaid("i-1", "a", "it said"), mode)
    assert (said.stderr, said.withheld) == (None, True)
    silent = invocation_stderr("r", InvocationSaid("i-1", "a", None), mode)
    assert (silent.stderr, silent.withheld) == (None, False)
