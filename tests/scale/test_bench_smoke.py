"""The queue bench still runs (tiny, no timing checked): bench/queue_throughput.py end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from _backends import DEFAULT_POSTGRES_URL
from _processes import child_env

pytestmark = pytest.mark.postgres
BENCH = Path(__file__).parents[2] / "bench" / "queue_throughput.py"


def test_the_queue_bench_runs_at_a_tiny_size(clean_environ: dict[str, str]) -> None:
    url = clean_environ.get("WOPEVAL_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)
    done = subprocess.run(
        [
            sys.executable,
            str(BENCH),
            "--tasks",
            "10",
            "--workers",
            "1",
            "--workloads",
            "io,replay",
            "--replay-workers",
            "1",
            "--database-url",
            url,
        ],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 worker(s) x 8" in done.stdout
    assert "queue/in-process" in done.stdout
