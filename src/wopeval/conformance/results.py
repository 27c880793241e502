"""What a conformance leg reports: a requirement id, a disposition and a detail (conformance.md).

A leg is a function that returns its pass detail or raises one of the three
outcomes below; the runner turns either into a `LegResult`. Raising keeps a
leg linear to read: each check states what it expects and stops at the first
thing that makes the rest meaningless, while `Checks` gathers the independent
observations of one leg so a failure reports all of them at once.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any


class Disposition(enum.StrEnum):
    """The dispositions a bundle records; `blocked` denies certification (conformance.md)."""

    EXECUTED_PASS = "executed-pass"
    EXECUTED_FAIL = "executed-fail"
    SKIPPED = "skipped"
    BLOCKED = "blocked"

    @property
    def is_problem(self) -> bool:
        """A failed or blocked leg makes the whole run unsuccessful (exit code non-zero)."""
        return self in (Disposition.EXECUTED_FAIL, Disposition.BLOCKED)


@dataclass(frozen=True, slots=True)
class LegResult:
    id: str
    """`openwop.requirement.<rfc>.<slug>` or `openwop.scenario.<name>`."""
    disposition: Disposition
    detail: str
    """Pass: what was observed. Fail: the observed value. Skipped/blocked: what is missing."""

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "disposition": self.disposition.value, "detail": self.detail}


class LegOutcome(Exception):
    """Raised by a leg to end it with a disposition other than a plain pass."""

    disposition: Disposition

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class LegFailed(LegOutcome):
    disposition = Disposition.EXECUTED_FAIL


class LegSkipped(LegOutcome):
    """The host does not advertise the facet or fixture the leg is gated on."""

    disposition = Disposition.SKIPPED


class LegBlocked(LegOutcome):
    """The leg applies but cannot run here (e.g. no tenant-B credential)."""

    disposition = Disposition.BLOCKED


def observed(value: Any) -> str:
    """A compact rendering of an observed value for a detail line (bounded in length)."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 400 else text[:397] + "..."


@dataclass
class Checks:
    """Independent expectations of one leg; `done()` fails with every miss, or returns the notes."""

    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def expect(self, condition: bool, problem: str) -> bool:
        if not condition:
            self.problems.append(problem)
        return condition

    def equal(self, what: str, actual: Any, expected: Any) -> bool:
        return self.expect(
            actual == expected,
            f"{what}: expected {observed(expected)}, observed {observed(actual)}",
        )

    def extend(self, problems: list[str]) -> None:
        self.problems.extend(problems)

    def note(self, text: str) -> None:
        self.notes.append(text)

    def done(self) -> str:
        if self.problems:
            raise LegFailed("; ".join(self.problems))
        return "; ".join(self.notes)


@dataclass(frozen=True, slots=True)
class Report:
    """The JSON report of one conformance run (`--report FILE`)."""

    host: str
    suite_version: str
    started_at: str
    results: tuple[LegResult, ...]

    @property
    def ok(self) -> bool:
        return not any(result.disposition.is_problem for result in self.results)

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "suiteVersion": self.suite_version,
            "startedAt": self.started_at,
            "results": [result.to_json() for result in self.results],
        }
