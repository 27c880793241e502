"""What the real APIs refuse, refused here the same way (status 400, each provider's wording).

A stand-in that accepts what the provider refuses hides a defect until production
(a tool named `server:tool`, a tool result for a call never made): every rule
below is one the provider enforces, with the message it answers.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import Refusal, invalid

OPENAI_TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]+")
ANTHROPIC_TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
NAME_MAX = 64


def missing(param: str) -> Refusal:
    return invalid(f"Missing required parameter: '{param}'.", param, "missing_required_parameter")


def openai_tool_name(name: Any, param: str) -> Refusal | None:
    """OpenAI: a function's name is `^[a-zA-Z0-9_-]+$`, at most 64 characters."""
    if name is None:
        return missing(param)
    if not isinstance(name, str):
        return invalid(f"Invalid type for '{param}': expected a string.", param, "invalid_type")
    if len(name) > NAME_MAX:
        return invalid(
            f"Invalid '{param}': string too long. Expected a string with maximum length "
            f"{NAME_MAX}, but got a string with length {len(name)} instead.",
            param,
            "string_above_max_length",
        )
    if not OPENAI_TOOL_NAME.fullmatch(name):
        return invalid(
            f"Invalid '{param}': string does not match pattern. Expected a string that "
            "matches the pattern '^[a-zA-Z0-9_-]+$'.",
            param,
            "invalid_value",
        )
    return None


def openai_credential(headers: dict[str, str]) -> Refusal | None:
    """OpenAI: a key in `Authorization: Bearer` (any key: the stand-in checks its presence)."""
    scheme, _, key = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and key.strip():
        return None
    return Refusal(
        401,
        "You didn't provide an API key. You need to provide your API key in an "
        "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
    )


def _json_type(value: Any) -> str:
    return {dict: "an object", bool: "a boolean", int: "an integer", float: "a number"}.get(
        type(value), "a value of another type"
    )


def openai_content(value: Any, param: str) -> Refusal | None:
    """OpenAI: a message's content, or a tool's output, is a string or an array of parts
    (an agent that hands over its tool's result object unserialised is refused)."""
    if value is None or isinstance(value, str | list):
        return None
    return invalid(
        f"Invalid type for '{param}': expected one of a string or array of objects, but got "
        f"{_json_type(value)} instead.",
        param,
        "invalid_type",
    )


def openai_arguments(value: Any, param: str) -> Refusal | None:
    """OpenAI: a function call's arguments are JSON text, never the object itself."""
    if isinstance(value, str):
        return None
    return invalid(
        f"Invalid type for '{param}': expected a string, but got {_json_type(value)} instead.",
        param,
        "invalid_type",
    )
