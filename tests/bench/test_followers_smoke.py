"""The followers bench still runs (tiny, SQLite, no timing checked): bench/followers.py."""

from __future__ import annotations

import pytest

from _bench import run_bench


@pytest.mark.parametrize("run", ["eval", "workflow"])
def test_the_followers_bench_runs_at_a_tiny_size(run: str) -> None:
    printed = run_bench("followers.py", "--followers", "5", "--events", "200", "--run", run)
    assert f"{run} run of 200 events" in printed
    assert "host CPU per follower per event: 5 followers" in printed
    assert "wall to the last terminal event: 5 followers" in printed
    assert "delivered events/s: 5 followers" in printed
    assert "host RSS peak above baseline: 5 followers" in printed
    assert "host RSS after the followers left, above baseline: 5 followers" in printed
    assert "streams cut for falling behind and resumed: 5 followers" in printed
