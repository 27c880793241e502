"""How old something is, as a person reads it: `3 d`, `5 h`, `12 min`, `40 s`."""

from __future__ import annotations

from datetime import datetime

_UNITS = (("d", 86400), ("h", 3600), ("min", 60))


def age_text(then: datetime, now: datetime) -> str:
    """The time from `then` to `now` in its largest whole unit (never negative)."""
    seconds = max(int((now - then).total_seconds()), 0)
    for unit, size in _UNITS:
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def parse_instant(text: str) -> datetime:
    """A wire timestamp (`2026-12-01T10:00:00Z` or with an offset) as an aware datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
