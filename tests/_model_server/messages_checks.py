"""Anthropic Messages: what Anthropic refuses in a request (see checks.py).

Anthropic combines consecutive messages of one role into one turn (its API
reference says so), so roles need not alternate; the first message must be the
user's, and a `tool_result` answers a `tool_use` of the assistant turn just
before its own turn, which must answer every one of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .checks import ANTHROPIC_TOOL_NAME
from .errors import Refusal, invalid

REQUIRED = ("model", "max_tokens", "messages")
ROLES = ("user", "assistant")
REQUIRED_BLOCK_FIELDS = {
    "text": ("text",),
    "tool_use": ("id", "name", "input"),
    "tool_result": ("tool_use_id",),
}


def credential(headers: dict[str, str]) -> Refusal | None:
    """An `x-api-key`, or (as the SDK sends an auth token) `Authorization: Bearer`; then the
    `anthropic-version` header every request must carry."""
    scheme, _, token = headers.get("authorization", "").partition(" ")
    if not headers.get("x-api-key", "").strip() and not (
        scheme.lower() == "bearer" and token.strip()
    ):
        return Refusal(401, "x-api-key header is required")
    if not headers.get("anthropic-version", "").strip():
        return invalid("anthropic-version: header is required")
    return None


def refusal(body: dict[str, Any]) -> Refusal | None:
    for name in REQUIRED:
        if body.get(name) is None:
            return invalid(f"{name}: Field required")
    max_tokens = body["max_tokens"]
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        return invalid("max_tokens: Input should be an integer greater than or equal to 1")
    system = body.get("system")
    if system is not None and not isinstance(system, str | list):
        return invalid("system: Input should be a valid string or a list of text blocks")
    messages = body["messages"]
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        return invalid("messages: Input should be a valid list of objects")
    if not messages:
        return invalid("messages: at least one message is required")
    return _messages(messages) or _tools(body.get("tools"))


def _messages(messages: list[dict[str, Any]]) -> Refusal | None:
    for index, message in enumerate(messages):
        if message.get("role") not in ROLES:
            return invalid(f"messages.{index}.role: Input should be 'user' or 'assistant'")
        if message.get("content") is None:
            return invalid(f"messages.{index}.content: Field required")
        for position, block in enumerate(blocks(message)):
            kind = str(block.get("type"))
            for name in REQUIRED_BLOCK_FIELDS.get(kind, ()):
                if name not in block:
                    return invalid(
                        f"messages.{index}.content.{position}.{kind}.{name}: Field required"
                    )
            if kind == "tool_result" and not isinstance(block.get("content", ""), str | list):
                return invalid(
                    f"messages.{index}.content.{position}.tool_result.content: "
                    "Input should be a valid string or a list of content blocks"
                )
    if messages[0]["role"] != "user":
        return invalid('messages: first message must use the "user" role')
    return _pairing(turns(messages))


def _tools(tools: Any) -> Refusal | None:
    if tools is None:
        return None
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        return invalid("tools: Input should be a valid list of objects")
    for index, tool in enumerate(tools):
        # Custom tools (no `type`, or `custom`) carry a name and an input schema; Anthropic's
        # own server tools are named by their type.
        if tool.get("type", "custom") != "custom":
            continue
        name = tool.get("name")
        if not isinstance(name, str) or not ANTHROPIC_TOOL_NAME.fullmatch(name):
            return invalid(
                f"tools.{index}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
            )
        if tool.get("input_schema") is None:
            return invalid(f"tools.{index}.custom.input_schema: Field required")
    return None


def blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [block for block in content if isinstance(block, dict)]


@dataclass
class RoleTurn:
    """Consecutive messages of one role, as Anthropic combines them; `blocks` keep the
    position of each in the request, for the error's path."""

    role: str
    first_index: int
    blocks: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def turns(messages: list[dict[str, Any]]) -> list[RoleTurn]:
    combined: list[RoleTurn] = []
    for index, message in enumerate(messages):
        if not combined or combined[-1].role != message["role"]:
            combined.append(RoleTurn(message["role"], index))
        combined[-1].blocks.extend(
            (f"messages.{index}.content.{position}", block)
            for position, block in enumerate(blocks(message))
        )
    return combined


def _pairing(combined: list[RoleTurn]) -> Refusal | None:
    for before, turn in zip([None, *combined], combined, strict=False):
        asked = (
            []
            if before is None or before.role != "assistant"
            else [b["id"] for _, b in before.blocks if b.get("type") == "tool_use"]
        )
        answered = [(path, b) for path, b in turn.blocks if b.get("type") == "tool_result"]
        for path, block in answered:
            if block["tool_use_id"] not in asked:
                return invalid(
                    f"{path}: unexpected `tool_use_id` found in `tool_result` blocks: "
                    f"{block['tool_use_id']}. Each `tool_result` block must have a "
                    "corresponding `tool_use` block in the previous message."
                )
        unanswered = [i for i in asked if i not in {b["tool_use_id"] for _, b in answered}]
        if before is not None and unanswered:
            return invalid(
                f"messages.{before.first_index}: `tool_use` ids were found without "
                f"`tool_result` blocks immediately after: {', '.join(unanswered)}. Each "
                "`tool_use` block must have a corresponding `tool_result` block in the next "
                "message."
            )
    return None
