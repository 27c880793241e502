"""The record-path bench still runs (tiny, no timing checked): bench/record_path.py end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _backends import DEFAULT_POSTGRES_URL
from _bench import run_bench

FLOORS = (
    "psycopg async, 2 autocommit INSERTs",
    "psycopg async pipeline, the host's statements",
    "psycopg async pipeline, the host's statements prepared",
    "libpq pipeline, the host's statements",
    "libpq pipeline, the host's statements prepared",
    "libpq pipeline, the host's statements, no BEGIN/COMMIT",
)
"""PostgreSQL's floors on the host's driver (bench/pg_floor.py), each beside the sync anchor."""


def run_record_bench(store: str, *more: str) -> str:
    return run_bench(
        "record_path.py", "--calls", "5", "--runs", "3", "--database-url", store, *more
    )


def test_the_record_path_bench_runs_on_sqlite() -> None:
    printed = run_record_bench("sqlite")
    assert "overhead   sqlite     1 run x 5 live calls" in printed
    assert "throughput sqlite     3 runs x 5 live calls" in printed
    assert "anchor sqlite3" in printed
    assert "floor " not in printed
    assert "all checked" in printed


@pytest.mark.postgres
def test_the_record_path_bench_runs_on_postgresql(
    clean_environ: dict[str, str], tmp_path: Path
) -> None:
    url = clean_environ.get("WOPEVAL_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)
    report = tmp_path / "record.json"
    printed = run_record_bench(url, "--json", str(report))
    assert "throughput postgresql 3 runs x 5 live calls" in printed
    assert "psycopg 2 commits" in printed
    for floor in FLOORS:
        assert f"floor      postgresql {floor}: p50 " in printed
    assert printed.count("x the sync anchor; host/floor ") == len(FLOORS)
    assert "all checked" in printed
    (store,) = json.loads(report.read_text())["stores"]
    assert store["postgres_anchor"]["driver"] == "psycopg"
    floors = store["postgres_floors"]
    assert [floor["driver"] for floor in floors] == list(FLOORS)
    # Each floor ran the lone run's 5 calls, two rows a call, every one checked.
    assert all(floor["calls"] == 5 and floor["rows"] == 10 for floor in floors)
    assert all(floor["per_call"]["p50_ms"] > 0 for floor in floors)
