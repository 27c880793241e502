"""The record-path bench still runs (tiny, no timing checked): bench/record_path.py end to end."""

from __future__ import annotations

import pytest

from _backends import DEFAULT_POSTGRES_URL
from _bench import run_bench


def run_record_bench(store: str) -> str:
    return run_bench("record_path.py", "--calls", "5", "--runs", "3", "--database-url", store)


def test_the_record_path_bench_runs_on_sqlite() -> None:
    printed = run_record_bench("sqlite")
    assert "overhead   sqlite     1 run x 5 live calls" in printed
    assert "throughput sqlite     3 runs x 5 live calls" in printed
    assert "anchor sqlite3" in printed
    assert "all checked" in printed


@pytest.mark.postgres
def test_the_record_path_bench_runs_on_postgresql(clean_environ: dict[str, str]) -> None:
    url = clean_environ.get("WOPEVAL_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)
    printed = run_record_bench(url)
    assert "throughput postgresql 3 runs x 5 live calls" in printed
    assert "psycopg 2 commits" in printed
    assert "all checked" in printed
