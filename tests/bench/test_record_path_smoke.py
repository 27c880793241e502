"""The record-path bench still runs (tiny, no timing checked): bench/record_path.py end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from _backends import DEFAULT_POSTGRES_URL
from _processes import child_env

BENCH = Path(__file__).parents[2] / "bench" / "record_path.py"


def run_bench(*stores: str) -> str:
    arguments = [sys.executable, str(BENCH), "--calls", "5", "--runs", "3"]
    for store in stores:
        arguments += ["--database-url", store]
    done = subprocess.run(
        arguments, capture_output=True, text=True, env=child_env(), timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_record_path_bench_runs_on_sqlite() -> None:
    printed = run_bench("sqlite")
    assert "overhead   sqlite     1 run x 5 live calls" in printed
    assert "throughput sqlite     3 runs x 5 live calls" in printed
    assert "anchor sqlite3" in printed
    assert "all checked" in printed


@pytest.mark.postgres
def test_the_record_path_bench_runs_on_postgresql(clean_environ: dict[str, str]) -> None:
    url = clean_environ.get("WOPEVAL_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)
    printed = run_bench(url)
    assert "throughput postgresql 3 runs x 5 live calls" in printed
    assert "psycopg 2 commits" in printed
    assert "all checked" in printed
