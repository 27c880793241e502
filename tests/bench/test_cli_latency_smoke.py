"""The CLI latency bench still runs (one run each, no timing checked): bench/cli_latency.py."""

from __future__ import annotations

import json
from pathlib import Path

from _bench import run_bench


def test_the_cli_latency_bench_runs_once_each(tmp_path: Path) -> None:
    report = tmp_path / "cli.json"
    printed = run_bench("cli_latency.py", "--runs", "1", "--json", str(report))
    commands = [timing["command"] for timing in json.loads(report.read_text())["timings"]]
    assert commands == [
        "python -c pass (anchor)",
        "wopeval --version",
        "wopeval --help",
        "bare FastAPI + SQLAlchemy host ready (floor)",
        "wopeval runs list: host ready",
        "wopeval runs list (embedded host), to exit",
        "wopeval runs list --url (serve running)",
        "wopeval runs list --data-dir (serve running)",
    ]
    assert "× the anchor" in printed
