"""The derivation bench still runs (tiny, no timing checked): bench/derive_path.py end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from _processes import child_env

BENCH = Path(__file__).parents[2] / "bench" / "derive_path.py"


def test_the_derivation_bench_runs_at_a_tiny_size(tmp_path: Path) -> None:
    report = tmp_path / "derive.json"
    done = subprocess.run(
        [sys.executable, str(BENCH), "--source-calls", "50", "--repeat", "1", "--tasks", "5",
         "--calls", "2", "--json", str(report)],
        capture_output=True, text=True, env=child_env(), timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "in-process create from a 50-call source" in done.stdout
    assert "create with 5 sources" in done.stdout
    assert "create -> terminal, 5 tasks x 2 calls" in done.stdout
    written = json.loads(report.read_text())
    assert written["derive"][0]["derived_entries"] == 50
    assert written["wire"][0]["derived"]["derived_rows"] == 5
