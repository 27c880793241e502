"""What an agent's process said, made safe to keep: redacted once, then bounded to its tail.

A command agent's stderr (an http agent's error answer) is kept with its
invocation and shown wherever the invocation is (docs/agents.md, "What the
agent said"). Before any copy of it exists it passes here, once:

- the invocation's capability token (its MCP endpoint's and model proxy's) is
  cut out wherever it appears, in a URL or on its own;
- so are the project's configured secrets (`Redactor.secrets`): tool, MCP server
  and http-lane credentials, the model upstreams' API keys, and the values of an
  agent's `env` entries whose name says they are secret;
- and whatever looks like a credential whoever it belongs to: a `Bearer` value,
  a string shaped like a provider's API key (`sk-…`).

Redaction runs over everything the lane kept before the tail is cut, so a
secret is replaced whole, never left half-visible at the cut.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from wopeval.wire.json_text import JsonObject

REDACTED = "[redacted]"
KEPT_BYTES = 16 * 1024
"""What is kept of an agent's output: its last 16 KiB, after redaction."""
CUT_NOTE = "[… earlier output cut: the last 16 KiB are kept]"
SHORTEST_SECRET = 4
"""A configured value shorter than this is not searched for: it would cut ordinary words."""

_SECRET_NAME = re.compile(
    r"key|token|secret|password|passwd|credential|authorization|cookie", re.IGNORECASE
)
_BEARER = re.compile(r"\b(bearer)\s+[A-Za-z0-9\-._~+/]+=*", re.IGNORECASE)
_PROVIDER_KEY = re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}")


@dataclass(frozen=True)
class SecretSource:
    """A configured secret: a literal value, or the environment variable holding it."""

    value: str | None = None
    env: str | None = None

    def current(self) -> str | None:
        """The secret now (a variable is read each time, as egress reads it); None if unset."""
        if self.value is not None:
            return self.value
        return os.environ.get(self.env) if self.env else None

    def __repr__(self) -> str:
        return f"SecretSource(env={self.env!r})"


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret (`API_KEY`, `TOKEN`, …)."""
    return _SECRET_NAME.search(name) is not None


@dataclass(frozen=True)
class Redactor:
    """The host's one redaction rule for what agents say (see the module docstring)."""

    secrets: tuple[SecretSource, ...] = ()

    def redact(self, text: str, also: Iterable[str] = ()) -> str:
        """`text` with every known secret, every `also` value (the invocation's token) and
        every credential-shaped string replaced by `[redacted]`."""
        return _shaped(text, self._known(also))

    def redact_error(self, error: JsonObject, also: Iterable[str] = ()) -> JsonObject:
        """A live tool's error (its message, its details) under `redact`, every string of it."""
        known = self._known(also)
        redacted: JsonObject = _each_string(error, lambda text: _shaped(text, known))
        return redacted

    def redact_known(self, value: JsonValue, also: Iterable[str] = ()) -> JsonValue:
        """A live tool's answer with the known secrets and `also` cut out of every string.

        Only known values: an answer is data the agent works with, and a string that merely
        looks like a credential (`Bearer …` in a how-to) is left as it is."""
        known = self._known(also)
        if not known:
            return value
        redacted: JsonValue = _each_string(value, lambda text: _cut(text, known))
        return redacted

    def _known(self, also: Iterable[str]) -> list[str]:
        """The configured secrets' values and `also`, long enough to search for, longest first
        (a secret that contains another is cut whole)."""
        values = {value for value in (s.current() for s in self.secrets) if value}
        values.update(also)
        return sorted((v for v in values if len(v) >= SHORTEST_SECRET), key=len, reverse=True)

    def kept_output(self, tail: bytes, total_bytes: int, also: Iterable[str] = ()) -> str | None:
        """What is kept of an agent's output: `tail` (its last bytes, of `total_bytes` it
        wrote) redacted, then its last `KEPT_BYTES`, after a first line saying so when
        anything before was cut. None when it wrote nothing."""
        if total_bytes == 0:
            return None
        redacted = self.redact(tail.decode("utf-8", errors="replace"), also).encode()
        kept = redacted[-KEPT_BYTES:]
        # A cut inside a character leaves a partial one in front: drop it.
        text = kept.decode("utf-8", errors="ignore")
        if total_bytes > len(tail) or len(redacted) > len(kept):
            return f"{CUT_NOTE}\n{text}"
        return text


def _shaped(text: str, known: list[str]) -> str:
    """`text` with the `known` values and anything credential-shaped cut out."""
    text = _cut(text, known)
    text = _BEARER.sub(lambda found: f"{found.group(1)} {REDACTED}", text)
    return _PROVIDER_KEY.sub(REDACTED, text)


def _cut(text: str, known: list[str]) -> str:
    for value in known:
        text = text.replace(value, REDACTED)
    return text


def _each_string(value: Any, change: Callable[[str], str]) -> Any:
    """`value` (JSON) with `change` applied to every string in it, keys included."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [_each_string(item, change) for item in value]
    if isinstance(value, dict):
        return {change(key): _each_string(item, change) for key, item in value.items()}
    return value
