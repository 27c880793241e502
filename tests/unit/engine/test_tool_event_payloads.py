"""The tool boundary's two events are built without pydantic (`events.Built`): each must be
written byte for byte as its validated payload would be, in every mode and outcome."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import JsonValue, ValidationError

from wopeval import evals
from wopeval.agents import WireContent
from wopeval.engine.recording import content
from wopeval.wire import events, json_text

ARGS: JsonValue = {"city": "Zürich", "days": 3, "units": ["c", 1.5], "flag": None}
ERROR = {"code": "tool_timeout", "message": "slow", "details": {"after": 2}, "retryable": True}
MODES: tuple[WireContent, ...] = ("full", "hash")


def _written(payload: events.Payload | events.Built) -> str:
    return json_text.compact({"type": payload.TYPE, "payload": payload.to_wire()})


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("args", [ARGS, None, [], "text"], ids=["object", "null", "list", "text"])
def test_a_call_is_written_as_its_validated_payload(mode: WireContent, args: JsonValue) -> None:
    full = mode == "full"
    validated = events.ToolCalled(
        agentId="agent",
        toolName="crm:lookup",
        callId="call-1",
        inputs=args if full else None,
        argsHash=None if full else evals.args_hash(args),
    )
    built = content.tool_called("agent", "crm:lookup", "call-1", args, mode)
    assert _written(built) == _written(validated)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("status", "result", "error", "duration"),
    [
        ("ok", {"temp": 21}, None, 0),
        ("ok", None, None, 12),
        ("ok", [1, 2], None, None),
        ("error", None, ERROR, 3),
        ("forbidden", None, {"code": "forbidden", "message": "no"}, None),
    ],
    ids=["ok", "ok-null", "ok-no-duration", "error", "forbidden"],
)
def test_a_return_is_written_as_its_validated_payload(
    mode: WireContent,
    status: events.ToolStatus,
    result: JsonValue,
    error: dict[str, Any] | None,
    duration: int | None,
) -> None:
    full = mode == "full"
    validated = events.ToolReturned(
        agentId="agent",
        toolName="crm:lookup",
        callId="call-1",
        status=status,
        outcome=result if full and status == "ok" else None,
        error=events.ToolError(**error) if error and full else None,
        durationMs=duration,
    )
    built = content.tool_returned(
        "agent", "crm:lookup", "call-1", status, result, error, duration, mode
    )
    assert _written(built) == _written(validated)


def test_a_tools_error_is_still_checked() -> None:
    """The error came from outside the host (a tool, an MCP server): it is validated still."""
    with pytest.raises(ValidationError):
        content.tool_returned(
            "agent", "crm:lookup", "call-1", "error", None, {"message": "no code"}, 1, "full"
        )
