"""The grammar `/openapi.json` gives a `{runId}` segment and a date-time is the one the host
holds them to (issue 25, item 7): a value the document admits is never refused for its shape."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wopeval.wire import date_time, errors, ids

TENANT = "tenant-a"


@given(segment=st.from_regex(ids.PROJECTED_RUN_ID_PATTERN, fullmatch=True))
def test_a_documented_run_segment_decodes_to_a_tenant_bound_id(segment: str) -> None:
    """Its answer is the run, 403 (another tenant) or 404 (no such run), never a 400."""
    try:
        run_id = ids.run_id_from_path(segment, TENANT)
    except (errors.IdTenantMismatch, errors.NotFound):
        return
    assert run_id.startswith(f"{TENANT}/")


@given(tenant=st.from_regex(r"(anon:)?[A-Za-z0-9._~-]{1,128}", fullmatch=True))
def test_every_minted_run_id_fits_the_documented_segment(tenant: str) -> None:
    segment = ids.project(ids.mint_run_id(tenant))
    assert re.fullmatch(ids.PROJECTED_RUN_ID_PATTERN, segment)
    assert ids.run_id_from_path(segment, tenant) == ids.unproject(segment)


@given(
    moment=st.datetimes(
        min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
    ),
    offset_minutes=st.integers(min_value=-23 * 60 - 59, max_value=23 * 60 + 59),
)
def test_every_rfc3339_date_time_reads_back_as_its_instant(
    moment: datetime, offset_minutes: int
) -> None:
    local = moment.astimezone(timezone(timedelta(minutes=offset_minutes)))
    assert date_time.parse_date_time(local.isoformat()) == moment


@pytest.mark.parametrize(
    "text",
    [
        "2026-01-31",
        "2026-01-31T09:30:00",
        "2026-01-31 09:30:00Z",
        "1769851800",
        "2026-01-31T09:30Z",
    ],
)
def test_a_date_time_that_is_not_rfc3339_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="RFC 3339"):
        date_time.parse_date_time(text)
