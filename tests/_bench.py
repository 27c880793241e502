"""Running a bench from bench/ as its CI smoke does: a subprocess at a tiny size."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from _processes import child_env

BENCHES = Path(__file__).parents[1] / "bench"


def run_bench(script: str, *arguments: str, timeout: float = 300.0) -> str:
    """Run `bench/SCRIPT` with `arguments`; what it printed, once it exited 0."""
    done = subprocess.run(
        [sys.executable, str(BENCHES / script), *arguments],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout
