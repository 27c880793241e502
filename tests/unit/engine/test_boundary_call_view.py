"""`content.boundary_call`: a recorded call shown with its content only where the wire showed it
and the agent still allows it; a fixture miss named as one."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import JsonValue

from wopeval import evals
from wopeval.agents import WireContent
from wopeval.engine.recording import content

ARGS: JsonValue = {"op": "inc", "key": "private"}


def recorded(**changes: Any) -> evals.RecordedCall:
    fields: dict[str, Any] = {
        "sequence": 7,
        "invocation_id": "inv",
        "agent_id": "agent",
        "is_delegate": False,
        "tool": "conformance.eval:counter",
        "call_id": "call-1",
        "inputs": ARGS,
        "status": "ok",
        "result": {"count": 1},
        "error": None,
        "served_by": "live",
        "duration_ms": 3,
    }
    fields.update(changes)
    return evals.RecordedCall(**fields)


def called(mode: WireContent, inputs: JsonValue = ARGS) -> dict[str, Any]:
    """The payload of the call's `agent.tool-called` as `content.tool_called` wrote it."""
    return content.tool_called(
        "agent", "conformance.eval:counter", "call-1", inputs, mode
    ).to_wire()


def test_a_full_call_of_a_full_agent_shows_its_args_and_result() -> None:
    view = content.boundary_call(recorded(), called("full"), "full")
    assert view.content_shown
    assert view.inputs == ARGS
    assert view.outcome == {"count": 1}
    assert view.args_hash == evals.args_hash(ARGS)


@pytest.mark.parametrize(
    ("event_mode", "agent_mode"),
    [("hash", "hash"), ("hash", "full"), ("full", "hash")],
    ids=["hash-then-and-now", "hash-then-full-now", "full-then-hash-now"],
)
def test_content_is_shown_only_where_the_event_showed_it_and_the_agent_still_allows_it(
    event_mode: WireContent, agent_mode: WireContent
) -> None:
    view = content.boundary_call(recorded(), called(event_mode), agent_mode)
    assert not view.content_shown
    assert view.inputs is None
    assert view.outcome is None
    assert view.args_hash == evals.args_hash(ARGS)
    assert (view.status, view.duration_ms, view.tool) == ("ok", 3, "conformance.eval:counter")


def test_a_call_whose_event_is_missing_or_scrubbed_shows_no_content() -> None:
    assert not content.boundary_call(recorded(), None, "full").content_shown
    scrubbed = {**called("full"), "argsHash": evals.args_hash(ARGS)}
    scrubbed.pop("inputs")
    assert not content.boundary_call(recorded(inputs=None), scrubbed, "full").content_shown


def test_a_fixture_miss_is_named_a_miss_and_its_error_follows_the_content_rule() -> None:
    miss = recorded(
        status="error",
        result=None,
        served_by="fixture",
        error={"code": "fixture_miss", "message": "no unconsumed fixture matches"},
    )
    shown = content.boundary_call(miss, called("full"), "full")
    assert shown.served_by == "miss"
    assert shown.error == miss.error
    hidden = content.boundary_call(miss, called("hash"), "hash")
    assert hidden.served_by == "miss"
    assert hidden.error is None
    served = content.boundary_call(recorded(served_by="fixture"), called("full"), "full")
    assert served.served_by == "fixture"
