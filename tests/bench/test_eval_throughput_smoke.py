"""The eval bench still runs (tiny, no timing checked): bench/eval_throughput.py end to end."""

from __future__ import annotations

from pathlib import Path

from _bench import run_bench


def test_the_eval_bench_runs_at_a_tiny_size(tmp_path: Path) -> None:
    report = tmp_path / "eval.json"
    printed = run_bench(
        "eval_throughput.py", "--tasks", "5", "--calls", "2", "--skip-inspect",
        "--json", str(report),
    )  # fmt: skip
    assert "summary passed 5/5" in printed
    assert "target   wopeval sqlite >= 1500 tasks/s" in printed
    assert report.exists()
