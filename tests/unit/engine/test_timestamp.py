"""An event's `timestamp`: ISO 8601 at millisecond precision, `Z` for UTC."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from wopeval.engine.runlog import timestamp


@given(st.datetimes(timezones=st.just(UTC)))
def test_a_utc_time_is_written_as_isoformat_writes_it_with_z(at: datetime) -> None:
    expected = at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert timestamp(at) == expected
    assert timestamp(at).endswith("Z")


def test_another_offset_keeps_its_offset() -> None:
    at = datetime(2026, 1, 2, 3, 4, 5, 678_900, tzinfo=timezone(timedelta(hours=2)))
    assert timestamp(at) == "2026-01-02T03:04:05.678+02:00"
