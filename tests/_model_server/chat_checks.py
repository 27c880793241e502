"""Chat Completions: what OpenAI refuses in a request (see checks.py)."""

from __future__ import annotations

from typing import Any

from .checks import missing, openai_arguments, openai_content, openai_tool_name
from .errors import Refusal, invalid

CHAT_ROLES = ("system", "developer", "user", "assistant", "tool", "function")


def refusal(body: dict[str, Any]) -> Refusal | None:
    """Chat Completions: the body's fields, its tools, and its tool messages' pairing."""
    if not body.get("model"):
        return invalid("you must provide a model parameter")
    messages = body.get("messages")
    if messages is None:
        return missing("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        return invalid("Invalid type for 'messages': expected an array of objects.", "messages")
    if not messages:
        return invalid(
            "Invalid 'messages': empty array. Expected an array with minimum length 1, "
            "but got an empty array instead.",
            "messages",
            "empty_array",
        )
    for index, message in enumerate(messages):
        refused = _message(message, f"messages[{index}]")
        if refused:
            return refused
    if body.get("stream_options") is not None and body.get("stream") is not True:
        return invalid(
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            "stream_options",
        )
    return _chat_tools(body.get("tools")) or _chat_tool_messages(messages)


def _message(message: dict[str, Any], param: str) -> Refusal | None:
    role = message.get("role")
    if role not in CHAT_ROLES:
        supported = ", ".join(f"'{r}'" for r in CHAT_ROLES)
        return invalid(
            f"Invalid value: '{role}'. Supported values are: {supported}.",
            f"{param}.role",
            "invalid_value",
        )
    refused = openai_content(message.get("content"), f"{param}.content")
    if refused:
        return refused
    for position, call in enumerate(message.get("tool_calls") or []):
        if not isinstance(call, dict) or call.get("type", "function") != "function":
            continue
        function = call.get("function")
        arguments = function.get("arguments") if isinstance(function, dict) else None
        refused = openai_arguments(arguments, f"{param}.tool_calls[{position}].function.arguments")
        if refused:
            return refused
    return None


def _chat_tools(tools: Any) -> Refusal | None:
    if tools is None:
        return None
    if not isinstance(tools, list):
        return invalid("Invalid type for 'tools': expected an array.", "tools", "invalid_type")
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type") not in ("function", "custom"):
            return invalid(
                f"Invalid value for 'tools[{index}].type': expected 'function' or 'custom'.",
                f"tools[{index}].type",
                "invalid_value",
            )
        if tool["type"] == "function":
            function = tool.get("function")
            if not isinstance(function, dict):
                return missing(f"tools[{index}].function")
            refused = openai_tool_name(function.get("name"), f"tools[{index}].function.name")
            if refused:
                return refused
    return None


def _chat_tool_messages(messages: list[dict[str, Any]]) -> Refusal | None:
    """A `tool` message answers a call of the assistant message just before its run of tool
    messages; each call of an assistant message is answered before the next message."""
    calls: set[str] = set()
    answered: set[str] = set()
    caller = -1
    for index, message in enumerate(messages):
        if message.get("role") == "tool":
            call_id = message.get("tool_call_id")
            if call_id is None:
                return missing(f"messages.[{index}].tool_call_id")
            if call_id not in calls:
                return invalid(
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'.",
                    f"messages.[{index}].role",
                )
            answered.add(call_id)
            continue
        if calls - answered:
            return _unanswered(caller, calls - answered)
        calls, answered, caller = set(), set(), index
        if message.get("role") == "assistant":
            tool_calls = message.get("tool_calls") or []
            calls = {str(c.get("id")) for c in tool_calls if isinstance(c, dict)}
    return _unanswered(caller, calls - answered) if calls - answered else None


def _unanswered(index: int, call_ids: set[str]) -> Refusal:
    return invalid(
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        + ", ".join(sorted(call_ids)),
        f"messages.[{index}].role",
    )
