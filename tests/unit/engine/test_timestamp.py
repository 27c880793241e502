"""An event's `timestamp`: ISO 8601 at millisecond precision, `Z` for UTC."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from wopeval.engine.runlog.steps import epoch_timestamp, event_time, timestamp

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
LAST = datetime(9999, 12, 31, 23, 59, 59, 999_000, tzinfo=UTC)
LAST_MS = (LAST - EPOCH) // timedelta(milliseconds=1)


@given(st.datetimes(timezones=st.just(UTC)))
def test_a_utc_time_is_written_as_isoformat_writes_it_with_z(at: datetime) -> None:
    assert timestamp(at) == at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert timestamp(at).endswith("Z")


def test_another_offset_keeps_its_offset() -> None:
    at = datetime(2026, 1, 2, 3, 4, 5, 678_900, tzinfo=timezone(timedelta(hours=2)))
    assert timestamp(at) == "2026-01-02T03:04:05.678+02:00"


@given(st.integers(min_value=0, max_value=LAST_MS))
def test_a_millisecond_since_the_epoch_is_written_as_its_datetime_is(epoch_ms: int) -> None:
    assert epoch_timestamp(epoch_ms) == timestamp(EPOCH + timedelta(milliseconds=epoch_ms))


def test_an_event_is_stamped_with_the_time_it_is_emitted() -> None:
    before = timestamp(datetime.now(UTC))
    stamped = [event_time() for _ in range(1000)]
    after = timestamp(datetime.now(UTC))
    # Same-width ISO texts order as their times do; the kept text is never a stale one.
    assert before <= stamped[0]
    assert stamped == sorted(stamped)
    assert stamped[-1] <= after
    time.sleep(0.002)
    assert event_time() > stamped[-1]
