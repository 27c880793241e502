"""The queue bench still runs (tiny, no timing checked): bench/queue_throughput.py end to end."""

from __future__ import annotations

import pytest

from _backends import DEFAULT_POSTGRES_URL
from _bench import run_bench

pytestmark = pytest.mark.postgres


def test_the_queue_bench_runs_at_a_tiny_size(clean_environ: dict[str, str]) -> None:
    url = clean_environ.get("WOPEVAL_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)
    printed = run_bench(
        "queue_throughput.py", "--tasks", "10", "--workers", "1", "--workloads", "io,replay",
        "--replay-workers", "1", "--database-url", url,
    )  # fmt: skip
    assert "1 worker(s) x 8" in printed
    assert "queue/in-process" in printed
