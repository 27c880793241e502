"""OpenAI Responses: what OpenAI refuses in a request (see checks.py).

`conversation` is the whole conversation the request continues: the items of
the stored response named by `previous_response_id` (its input and output),
then the request's own input items.
"""

from __future__ import annotations

from typing import Any

from .checks import missing, openai_arguments, openai_content, openai_tool_name
from .errors import Refusal, invalid

MESSAGE_ROLES = ("user", "assistant", "system", "developer")
REQUIRED_ITEM_FIELDS = {
    "message": ("role", "content"),
    "function_call": ("call_id", "name", "arguments"),
    "function_call_output": ("call_id", "output"),
}


def previous_not_found(response_id: str) -> Refusal:
    return invalid(
        f"Previous response with id '{response_id}' not found.",
        "previous_response_id",
        "previous_response_not_found",
    )


def refusal(body: dict[str, Any]) -> Refusal | None:
    """The body's own fields: model, input and its items, tools."""
    if not body.get("model"):
        return missing("model")
    raw = body.get("input")
    if raw is None:
        return missing("input")
    if isinstance(raw, str):
        return _tools(body.get("tools"))
    if not isinstance(raw, list):
        return invalid("Invalid type for 'input': expected a string or an array.", "input")
    for index, item in enumerate(raw):
        refused = _item(item, f"input[{index}]")
        if refused:
            return refused
    return _tools(body.get("tools"))


def _item(item: Any, param: str) -> Refusal | None:
    if not isinstance(item, dict):
        return invalid(f"Invalid type for '{param}': expected an object.", param, "invalid_type")
    kind = item.get("type", "message")
    for field in REQUIRED_ITEM_FIELDS.get(kind, ()):
        if item.get(field) is None:
            return missing(f"{param}.{field}")
    if kind == "message" and item["role"] not in MESSAGE_ROLES:
        supported = ", ".join(f"'{r}'" for r in MESSAGE_ROLES)
        return invalid(
            f"Invalid value: '{item['role']}'. Supported values are: {supported}.",
            f"{param}.role",
            "invalid_value",
        )
    if kind == "function_call":
        return openai_arguments(item["arguments"], f"{param}.arguments")
    if kind == "function_call_output":
        return openai_content(item["output"], f"{param}.output")
    if kind == "message":
        return openai_content(item["content"], f"{param}.content")
    return None


def _tools(tools: Any) -> Refusal | None:
    if tools is None:
        return None
    if not isinstance(tools, list):
        return invalid("Invalid type for 'tools': expected an array.", "tools", "invalid_type")
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict) or not isinstance(tool.get("type"), str):
            return missing(f"tools[{index}].type")
        if tool["type"] == "function":
            refused = openai_tool_name(tool.get("name"), f"tools[{index}].name")
            if refused:
                return refused
    return None


def pairing(conversation: list[dict[str, Any]]) -> Refusal | None:
    """Each function call output answers a call the conversation holds before it, and each
    function call the conversation holds has its output."""
    issued: set[str] = set()
    answered: set[str] = set()
    for item in conversation:
        if item.get("type") == "function_call":
            issued.add(item["call_id"])
        elif item.get("type") == "function_call_output":
            if item["call_id"] not in issued:
                return invalid(
                    f"No tool call found for function call output with call_id {item['call_id']}.",
                    "input",
                )
            answered.add(item["call_id"])
    unanswered = sorted(issued - answered)
    if unanswered:
        return invalid(f"No tool output found for function call {unanswered[0]}.", "input")
    return None
