"""The production-runs bench still runs (tiny, no timing checked): bench/wire_runs.py end to
end, a real `wopeval serve` taking concurrent `POST /runs` whose agents make live calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _backends import DEFAULT_POSTGRES_URL
from _bench import run_bench


def run_wire_bench(store: str, report: Path) -> str:
    return run_bench(
        "wire_runs.py",
        "--calls",
        "3",
        "--runs",
        "3",
        "--rounds",
        "1",
        "--database-url",
        store,
        "--json",
        str(report),
    )


def test_the_wire_runs_bench_runs_on_sqlite(tmp_path: Path) -> None:
    printed = run_wire_bench("sqlite", tmp_path / "wire.json")
    assert "wire       sqlite     3 runs x 3 live calls over HTTP" in printed
    assert "anchor     sqlite     sqlite3 2 commits" in printed
    assert "warm-up    sqlite     3 runs x 3 live calls over HTTP" in printed
    assert "round 1    sqlite     3 runs x 3 live calls over HTTP" in printed
    # The warm-up round's and the counted round's records, each checked.
    assert "18 tool records, all checked" in printed
    (store,) = json.loads((tmp_path / "wire.json").read_text())["stores"]
    assert store["wire"]["rounds"] == 1
    assert [each["tool_call_rows"] for each in [store["warm_up"], *store["rounds"]]] == [9, 9]


@pytest.mark.postgres
def test_the_wire_runs_bench_runs_on_postgresql(
    clean_environ: dict[str, str], tmp_path: Path
) -> None:
    url = clean_environ.get("WOPEVAL_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)
    printed = run_wire_bench(url, tmp_path / "wire.json")
    assert "wire       postgresql 3 runs x 3 live calls over HTTP" in printed
    assert "psycopg 2 commits" in printed
    assert "18 tool records, all checked" in printed
