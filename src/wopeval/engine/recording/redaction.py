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

A secret named by an environment variable is read at every redaction, as egress reads
it at every call, so a rotated or newly set one is cut from the next thing redacted.
Only the read is repeated: the searched-for list is rebuilt when a value read differs
from the last (`_Known`), not for every live call's args and answer.

Redaction runs over everything the lane kept before the tail is cut, so a
secret is replaced whole, never left half-visible at the cut.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
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

    def __repr__(self) -> str:
        return f"SecretSource(env={self.env!r})"


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret (`API_KEY`, `TOKEN`, …)."""
    return _SECRET_NAME.search(name) is not None


class _Known:
    """The configured secrets' values as last read, and the list they make (`_searched`)."""

    def __init__(self, secrets: tuple[SecretSource, ...]) -> None:
        self._literals = [s.value for s in secrets if s.value is not None]
        self._variables = [s.env for s in secrets if s.value is None and s.env]
        self._fixed = _searched(self._literals)
        """What is searched for when no secret is read from the environment."""
        self._last: tuple[list[str | None], tuple[str, ...]] | None = None
        """The variables' values last read, and the list made of them (one assignment, so
        a reader never pairs one read with another's list)."""

    def now(self) -> tuple[str, ...]:
        """The configured secrets searched for now: the variables are read each time."""
        if not self._variables:
            # Literals alone never change: a project without secrets in its environment
            # pays no read and no comparison on every tool call's args.
            return self._fixed
        read = [os.environ.get(name) for name in self._variables]
        last = self._last
        if last is not None and last[0] == read:
            return last[1]
        made = _searched([*self._literals, *(value for value in read if value)])
        self._last = (read, made)
        return made


@dataclass(frozen=True)
class Redactor:
    """The host's one redaction rule for what agents say (see the module docstring)."""

    secrets: tuple[SecretSource, ...] = ()
    _configured: _Known = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_configured", _Known(self.secrets))

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

    def _known(self, also: Iterable[str]) -> tuple[str, ...]:
        """The configured secrets' values and `also`, long enough to search for, longest first
        (a secret that contains another is cut whole)."""
        configured = self._configured.now()
        if not also:
            # Nothing besides the configured secrets (every call's args, before the
            # invocation handed its token out): those, without a tuple made of nothing.
            return configured
        extra = tuple(also)
        return _searched([*configured, *extra]) if extra else configured

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


def _searched(values: Iterable[str]) -> tuple[str, ...]:
    """`values` long enough to search for, each once, longest first."""
    kept = {value for value in values if len(value) >= SHORTEST_SECRET}
    return tuple(sorted(kept, key=len, reverse=True))


def _shaped(text: str, known: tuple[str, ...]) -> str:
    """`text` with the `known` values and anything credential-shaped cut out."""
    text = _cut(text, known)
    text = _BEARER.sub(lambda found: f"{found.group(1)} {REDACTED}", text)
    return _PROVIDER_KEY.sub(REDACTED, text)


def _cut(text: str, known: tuple[str, ...]) -> str:
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
