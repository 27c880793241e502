"""The read-path bench still runs (tiny, no timing checked): bench/read_path.py end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from _processes import child_env

BENCH = Path(__file__).parents[2] / "bench" / "read_path.py"


def test_the_read_path_bench_runs_at_a_tiny_size(tmp_path: Path) -> None:
    report = tmp_path / "read.json"
    done = subprocess.run(
        [sys.executable, str(BENCH), "--seconds", "1", "--connections", "2", "--python-load",
         "--json", str(report)],
        capture_output=True, text=True, env=child_env(), timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    for read in ("get-run", "poll", "list"):
        assert f"{read:8} host" in done.stdout
    assert '"generator": "python"' in report.read_text()
