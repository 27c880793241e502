"""A recorded tool call of the scripted agent, for tests of derivation (RFC 0252 §D)."""

from __future__ import annotations

from typing import Any

from wopeval import evals

AGENT = "conformance.scripted-agent"


def recorded(sequence: int, **overrides: Any) -> evals.RecordedCall:
    """An `ok` live call of the counter tool by `AGENT`, with `overrides`."""
    fields: dict[str, Any] = {
        "sequence": sequence,
        "invocation_id": "inv-1",
        "agent_id": AGENT,
        "is_delegate": False,
        "tool": "conformance.eval:counter",
        "call_id": f"call-{sequence}",
        "inputs": {"op": "inc", "key": "k"},
        "status": "ok",
        "result": {"key": "k", "count": sequence},
        "error": None,
        "served_by": "live",
        "duration_ms": 3,
    }
    fields.update(overrides)
    return evals.RecordedCall(**fields)
