"""Server-sent events as the model APIs write them: reading `data:` lines, writing events."""

from __future__ import annotations

import json
from typing import Any


def data_of(line: str) -> dict[str, Any] | None:
    """The JSON object a `data:` line carries; None for any other line or payload."""
    if not line.startswith("data:"):
        return None
    try:
        data = json.loads(line.removeprefix("data:").strip())
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def data_event(data: dict[str, Any]) -> bytes:
    """A `data:`-only event (Chat Completions)."""
    return b"data: " + _compact(data) + b"\n\n"


def named_event(data: dict[str, Any]) -> bytes:
    """An event named by its data's `type` (Responses, Anthropic Messages)."""
    return b"event: " + str(data["type"]).encode() + b"\ndata: " + _compact(data) + b"\n\n"


def _compact(data: dict[str, Any]) -> bytes:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()
