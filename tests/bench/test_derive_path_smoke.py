"""The derivation bench still runs (tiny, no timing checked): bench/derive_path.py end to end."""

from __future__ import annotations

import json
from pathlib import Path

from _bench import run_bench


def test_the_derivation_bench_runs_at_a_tiny_size(tmp_path: Path) -> None:
    report = tmp_path / "derive.json"
    printed = run_bench(
        "derive_path.py", "--source-calls", "50", "--repeat", "1", "--tasks", "5",
        "--calls", "2", "--json", str(report),
    )  # fmt: skip
    assert "in-process create from a 50-call source" in printed
    assert "POST /runs deriving from a 50-call source" in printed
    assert "create with 5 sources" in printed
    assert "create -> terminal, 5 tasks x 2 calls" in printed
    written = json.loads(report.read_text())
    assert written["derive"][0]["derived_entries"] == 50
    assert written["wire"][0]["derived"]["derived_rows"] == 5
    assert len(written["wire_derive"][0]["create_ms"]) == 1
