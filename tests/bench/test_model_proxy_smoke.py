"""The model-proxy bench still runs (tiny, no timing checked): bench/model_proxy.py end to end,
every wire API whole and streamed, each proxied exchange checked as recorded, and the floor
sides (bench/bare_relay.py) measured beside the host."""

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
            for floor in ("floor", "splice"):
                assert f"floor      {api:9} {mode:8} {floor}: 1 agent p50" in printed
    assert "proxied exchanges, one row each, all checked" in printed
    written = json.loads(report.read_text())
    assert set(written["floors"]) >= {"floor", "splice"}
    results = written["results"]
    assert {(r["api"], r["stream"]) for r in results} == {
        (api, stream) for api in ("chat", "responses", "messages") for stream in (False, True)
    }
    for result in results:
        lone, crowd = result["overhead"], result["concurrent"]
        for floor in written["floors"]:
            assert lone["beside"][floor]["side"]["last"]["p50_ms"] > 0
            assert lone["beside"][floor]["cpu_ms_per_call"] >= 0
            streamed = lone["beside"][floor]["added_first_p50_ms"] is not None
            assert streamed == result["stream"]
            assert crowd["beside"][floor]["ratio"] > 0
            assert floor in crowd["beside"][floor]["cpu_ms_per_call"]
        # the 1-agent rounds rotate through every side, the crowd's phases cover each
        assert {p["side"] for p in crowd["phases"]} == {"direct", "host", *written["floors"]}
