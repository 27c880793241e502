"""The read-path bench still runs (tiny, no timing checked): bench/read_path.py end to end."""

from __future__ import annotations

from pathlib import Path

from _bench import run_bench


def test_the_read_path_bench_runs_at_a_tiny_size(tmp_path: Path) -> None:
    report = tmp_path / "read.json"
    printed = run_bench(
        "read_path.py", "--seconds", "1", "--connections", "2", "--python-load",
        "--json", str(report),
    )  # fmt: skip
    for read in ("get-run", "poll", "list"):
        assert f"{read:8} host" in printed
    assert '"generator": "python"' in report.read_text()
