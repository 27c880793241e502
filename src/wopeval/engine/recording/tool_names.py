"""Provider-safe tool names: the name an agent is offered for the host's canonical `server:tool`.

Model APIs accept a function (tool) name only when it matches
`^[a-zA-Z0-9_-]{1,64}$` (OpenAI's function `name`, Anthropic's tool `name`),
and most agents hand the names an MCP server lists straight to their model.
So every name an agent is offered — the per-invocation MCP endpoint's
`tools/list` and the openai lane's functions — is mapped by `offered_name`:

1. each `:` becomes `__`: `orders:refund` is offered as `orders__refund`;
2. a name that is still not safe (another character outside `[a-zA-Z0-9_-]`,
   such as the `.` of `conformance.eval:counter`, or longer than 64) has each
   such character replaced by `_`, is cut to 55 characters, and ends in `_`
   and the first 8 hex digits of the SHA-256 of the canonical name, so two
   names cut alike still differ: `conformance_eval__counter_<8 hex>`.

The mapping is reversed by lookup over the names offered (`ToolNames`): a
host whose tools would be offered by one name twice does not start, and the
refusal names both. Only the offer is mapped: records, fixtures, suites,
events and reasons keep the canonical name, so recordings made before replay
unchanged (docs/agents.md, "Tool names").
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

SAFE_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""What OpenAI and Anthropic accept as a function or tool name."""

MAX_LENGTH = 64
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
_DIGEST_HEX = 8
_KEPT = MAX_LENGTH - 1 - _DIGEST_HEX
"""Characters of the cleaned name kept before `_` and the digest."""


def offered_name(canonical: str) -> str:
    """The provider-safe name `canonical` is offered by (rules 1 and 2 above)."""
    name = canonical.replace(":", "__")
    if SAFE_NAME.match(name):
        return name
    digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:_DIGEST_HEX]
    return f"{_UNSAFE.sub('_', name)[:_KEPT]}_{digest}"


class ToolNameClash(ValueError):
    """Two tools would be offered by one name."""

    def __init__(self, first: str, second: str, offered: str) -> None:
        super().__init__(f"tools {first!r} and {second!r} would both be offered as {offered!r}")
        self.tools = (first, second)
        self.offered = offered


@dataclass(frozen=True)
class ToolNames:
    """Offered name ↔ canonical name, for one set of tools (both ways)."""

    by_offered: dict[str, str]

    @classmethod
    def of(cls, canonical_names: Iterable[str]) -> ToolNames:
        """The names `canonical_names` are offered by; raises ToolNameClash when two collide."""
        by_offered: dict[str, str] = {}
        for canonical in sorted(set(canonical_names)):
            offered = offered_name(canonical)
            taken = by_offered.get(offered)
            if taken is not None:
                raise ToolNameClash(taken, canonical, offered)
            by_offered[offered] = canonical
        return cls(by_offered)

    def offered(self, canonical: str) -> str:
        """The name one of these tools is offered by."""
        return offered_name(canonical)

    def canonical(self, offered: str) -> str | None:
        """The tool an offered name stands for; None when it names none of these tools."""
        return self.by_offered.get(offered)


@lru_cache(maxsize=256)
def names_of(canonical_names: frozenset[str]) -> ToolNames:
    """`ToolNames.of`, kept per set of names: an endpoint maps every call through it; raises
    ToolNameClash like it."""
    return ToolNames.of(canonical_names)
