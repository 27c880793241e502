"""The followers bench still runs (tiny, SQLite, no timing checked): bench/followers.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from _processes import child_env

BENCH = Path(__file__).parents[2] / "bench" / "followers.py"


@pytest.mark.parametrize("run", ["eval", "workflow"])
def test_the_followers_bench_runs_at_a_tiny_size(run: str) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--followers", "5", "--events", "200", "--run", run],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{run} run of 200 events" in done.stdout
    assert "host CPU per follower per event: 5 followers" in done.stdout
    assert "wall to the last terminal event: 5 followers" in done.stdout
    assert "delivered events/s: 5 followers" in done.stdout
