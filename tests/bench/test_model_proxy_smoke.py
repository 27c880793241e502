"""The model-proxy bench still runs (tiny, no timing checked): bench/model_proxy.py end to end,
every wire API whole and streamed, each proxied exchange checked as recorded."""

from __future__ import annotations

import json
from pathlib import Path

from _bench import run_bench


def test_the_model_proxy_bench_runs_at_a_tiny_size(tmp_path: Path) -> None:
    report = tmp_path / "proxy.json"
    printed = run_bench(
        "model_proxy.py", "--exchanges", "4", "--agents", "2", "--per-agent", "2",
        "--rounds", "1", "--json", str(report),
    )  # fmt: skip
    for api in ("chat", "responses", "messages"):
        for mode in ("whole", "streamed"):
            assert f"overhead   {api:9} {mode:8} 1 agent x 4" in printed
            assert f"agents     {api:9} {mode:8} 2 agents x 1 rounds" in printed
    assert "proxied exchanges, one row each, all checked" in printed
    results = json.loads(report.read_text())["results"]
    assert {(r["api"], r["stream"]) for r in results} == {
        (api, stream) for api in ("chat", "responses", "messages") for stream in (False, True)
    }
