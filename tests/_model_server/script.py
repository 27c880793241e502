"""Scripted conversations: which conversation a request continues, and its next turn.

Every wire API reads its request into a `Transcript` (first user text, system
text, how many model turns it already carries, the tool names it offers); the
script answers with the turn to play, a scripted failure, or why it cannot play.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

Turn = dict[str, Any]
"""One scripted answer, as the script file spells it (see the package docstring)."""
TURN_KEYS = frozenset(
    {
        "content",
        "json",
        "tool_calls",
        "refusal",
        "finish_reason",
        "fail_first",
        "fail_always",
        "unoffered",
        "usage",
    }
)


@dataclass(frozen=True)
class Transcript:
    """What the script needs of a request, whichever wire API carried it."""

    first_user: str | None
    """The text of the conversation's first user message."""
    system: str
    """The system (or developer) text, all of it joined; "" when there is none."""
    turns_taken: int
    """How many model turns the conversation already holds: the next one is this index."""
    offered: frozenset[str]
    """The names of the function tools the request offers."""


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: str
    """The arguments as the model sends them: JSON text."""


@dataclass(frozen=True)
class Reply:
    """A turn to play, whichever API renders it."""

    turn_index: int
    text: str | None
    refusal: str | None
    calls: tuple[ToolCall, ...]
    finish: str
    """OpenAI's finish reason (`stop`, `length`, `tool_calls`); each API maps it."""
    usage: dict[str, int] | None = None
    """Token counts the turn reports in place of the counted ones (Chat Completions)."""


def reply(turn: Turn, turn_index: int) -> Reply:
    text = turn.get("content")
    if "json" in turn:
        text = json.dumps(turn["json"], separators=(",", ":"))
    calls = tuple(
        ToolCall(call["name"], json.dumps(call["arguments"])) for call in turn.get("tool_calls", [])
    )
    finish = turn.get("finish_reason") or ("tool_calls" if calls else "stop")
    return Reply(turn_index, text, turn.get("refusal"), calls, str(finish), turn.get("usage"))


@dataclass(frozen=True)
class Failure:
    """A scripted error answer (`fail_first`, `fail_always`)."""

    status: int
    retry_after: str | None


@dataclass(frozen=True)
class Unplayable:
    """The script cannot answer this request (a 400 in the API's error shape)."""

    code: str
    message: str


@dataclass
class Conversation:
    user: str
    turns: list[Turn]
    system_contains: str | None = None
    failures_served: dict[int, int] = field(default_factory=dict)
    """Per turn, how many of its `fail_first` answers were given (kept on the conversation:
    its position in the script moves as later conversations are added in front)."""

    def matches(self, transcript: Transcript) -> bool:
        if transcript.first_user != self.user:
            return False
        return self.system_contains is None or self.system_contains in transcript.system


@dataclass
class Received:
    """One request as the server received it."""

    path: str
    headers: dict[str, str]
    """Lower-cased names."""
    body: dict[str, Any]
    first_user: str | None

    @property
    def authorization(self) -> str | None:
        return self.headers.get("authorization")


@dataclass
class ModelScript:
    conversations: list[Conversation] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, user: str, turns: list[Turn], *, system_contains: str | None = None) -> None:
        """Script a conversation; a later one with the same key is found first."""
        for index, turn in enumerate(turns):
            _check_turn(turn, f"{user!r} turn {index}")
        with self._lock:
            self.conversations.insert(0, Conversation(user, turns, system_contains))

    def load(self, document: dict[str, Any]) -> None:
        for entry in reversed(document["conversations"]):
            self.add(entry["user"], entry["turns"], system_contains=entry.get("system_contains"))

    def requests_with(self, user: str) -> list[Received]:
        """The requests received for the conversation whose first user message is `user`."""
        return [r for r in self.received if r.first_user == user]

    def answer(self, transcript: Transcript) -> Reply | Failure | Unplayable:
        with self._lock:
            conversation = next((c for c in self.conversations if c.matches(transcript)), None)
            if conversation is None:
                return Unplayable("unscripted", "no script for this conversation")
            index = transcript.turns_taken
            if index >= len(conversation.turns):
                return Unplayable("script_exhausted", "the script has no more turns")
            turn = conversation.turns[index]
            always = turn.get("fail_always")
            if always is not None:
                return _failure(always)
            first = turn.get("fail_first") or []
            served = conversation.failures_served.get(index, 0)
            if served < len(first):
                conversation.failures_served[index] = served + 1
                return _failure(first[served])
        played = reply(turn, index)
        # A model calls only the tools it is offered: a script that names another is out of
        # step with the agent (a renamed tool, a missing mapping), never a turn to play.
        unoffered = sorted({c.name for c in played.calls} - transcript.offered)
        if unoffered and not turn.get("unoffered"):
            offered = ", ".join(sorted(transcript.offered)) or "none"
            return Unplayable(
                "unoffered_tool",
                f"turn {index} calls {', '.join(unoffered)}, not offered (offered: {offered})",
            )
        return played


def _check_turn(turn: Turn, where: str) -> None:
    """A misspelt key would play as an empty answer: refuse the script instead."""
    unknown = sorted(set(turn) - TURN_KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown keys {unknown} (known: {sorted(TURN_KEYS)})")
    for call in turn.get("tool_calls", []):
        if set(call) != {"name", "arguments"}:
            raise ValueError(f"{where}: a tool call is {{name, arguments}}, not {sorted(call)}")


def _failure(spec: dict[str, Any]) -> Failure:
    retry_after = spec.get("retry_after")
    return Failure(int(spec["status"]), None if retry_after is None else str(retry_after))


def text_of(content: Any) -> str | None:
    """A message's text: its string content, or its text parts joined (any API's part
    shape carries the text under `text`); None when it has neither."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        ]
        return "".join(texts) if texts else None
    return None
