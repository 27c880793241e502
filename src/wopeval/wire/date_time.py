"""RFC 3339 §5.6 `date-time`: what a `format: date-time` value in `/openapi.json` promises.

Pydantic's own datetime parsing takes much more (a bare date, no offset, a space
for the `T`, seconds since the epoch); a query parameter documented as a
date-time refuses all of that, so a client learns the one form the document
names. A leap second (`:60`) is refused too: no stored instant can hold it.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated

from pydantic import BeforeValidator

_DATE_TIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})"
)
_REFUSAL = "must be an RFC 3339 date-time, such as 2026-01-31T09:30:00Z"


def parse_date_time(value: object) -> datetime:
    """The instant an RFC 3339 date-time names (always with its offset); ValueError otherwise."""
    if not isinstance(value, str) or not _DATE_TIME.fullmatch(value):
        raise ValueError(_REFUSAL)
    try:
        # `fromisoformat` reads every RFC 3339 form once `t` and `z` are upper case; it
        # refuses the calendar's impossible values (month 13, hour 24, offset 24:00).
        return datetime.fromisoformat(value.upper())
    except ValueError:
        raise ValueError(_REFUSAL) from None


DateTime = Annotated[datetime, BeforeValidator(parse_date_time)]
"""A `format: date-time` value, validated as RFC 3339 rather than as pydantic's ISO 8601."""
