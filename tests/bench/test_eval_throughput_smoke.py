"""The eval bench still runs (tiny, no timing checked): bench/eval_throughput.py end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from _processes import child_env

BENCH = Path(__file__).parents[2] / "bench" / "eval_throughput.py"


def test_the_eval_bench_runs_at_a_tiny_size(tmp_path: Path) -> None:
    report = tmp_path / "eval.json"
    done = subprocess.run(
        [sys.executable, str(BENCH), "--tasks", "5", "--calls", "2", "--skip-inspect",
         "--json", str(report)],
        capture_output=True, text=True, env=child_env(), timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "summary passed 5/5" in done.stdout
    assert "target   wopeval sqlite >= 1500 tasks/s" in done.stdout
    assert report.exists()
