"""A page's fenced blocks as the tests that follow it read them (README.md, docs/own-agent.md).

Every fenced block of such a page is marked just above it: `<!-- readme: runs NAME -->`
(a test runs it), `<!-- readme: synopsis -->` or `<!-- readme: illustrative -->`.
"""

from __future__ import annotations

import re
from pathlib import Path

MARKED = re.compile(
    r"<!-- readme: (runs [\w-]+|synopsis|illustrative) -->\n```(\w*)\n(.*?)\n```", re.S
)


def runnable_blocks(page: Path) -> dict[str, tuple[str, str]]:
    """Each runnable block of `page` by name: (language, text), in the page's order."""
    text = page.read_text(encoding="utf-8")
    fences = text.count("\n```") // 2
    marked = MARKED.findall(text)
    assert len(marked) == fences, f"every fenced block of {page.name} carries a readme marker"
    return {kind.removeprefix("runs "): (language, body) for kind, language, body in marked
            if kind.startswith("runs ")}  # fmt: skip
