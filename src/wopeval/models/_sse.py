"""Server-sent events as the model APIs write them: reading `data:` lines, writing events."""

from __future__ import annotations

import codecs
import json
import re
from typing import Any

from wopeval.wire import json_text

_LINE_END = re.compile("\r\n|\r|\n")
"""The SSE grammar's line ends, and no others (`str.splitlines` would also split at
U+2028 and the like, which a JSON string may carry raw)."""


class SseLines:
    """The lines of an SSE stream that arrives in chunks cut anywhere, even inside a
    character or between a CR and its LF, each line without its end."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._pending = ""

    def feed(self, chunk: bytes, *, final: bool = False) -> list[str]:
        """The lines `chunk` completes; with `final`, the stream's last line too."""
        text = self._pending + self._decoder.decode(chunk, final)
        held = ""
        if text.endswith("\r") and not final:
            text, held = text[:-1], "\r"  # maybe the first half of a CRLF
        lines = _LINE_END.split(text)
        self._pending = lines.pop() + held
        if final and self._pending:
            lines.append(self._pending)
            self._pending = ""
        return lines


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
    # `dumped`: a replayed answer may hold a lone surrogate (`"\\ud800"`, as a server
    # wrote it), which no UTF-8 holds; the stream broke off at it.
    return json_text.dumped(data, separators=(",", ":")).encode()
