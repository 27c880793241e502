"""The MCP-endpoint bench still runs (tiny, no timing checked): bench/mcp_endpoint.py end to
end, a stdio and a Streamable HTTP server, each call through the host checked as recorded,
the bare relay (bench/bare_mcp_relay.py) measured beside the host as the floor, and the
agent's own client over HTTP beside its stdio server."""

from __future__ import annotations

import json
from pathlib import Path

from _bench import run_bench


def test_the_mcp_endpoint_bench_runs_at_a_tiny_size(tmp_path: Path) -> None:
    report = tmp_path / "mcp.json"
    printed = run_bench(
        "mcp_endpoint.py", "--calls", "4", "--agents", "2", "--per-agent", "2",
        "--rounds", "1", "--json", str(report),
    )  # fmt: skip
    for server in ("stdio", "http "):
        assert f"overhead   {server} 1 agent x 4" in printed
        assert f"agents     {server} 2 agents x 1 rounds" in printed
        assert f"floor      {server} 1 agent x 4: floor p50" in printed
        assert f"floor      {server} 2 agents: floor" in printed
    assert "transport  stdio the agent over HTTP to the HTTP server" in printed
    assert "calls through the host, one row each, all checked" in printed
    results = json.loads(report.read_text())["results"]
    assert [r["server"] for r in results] == ["stdio", "http"]
    for result in results:
        lone, crowd = result["overhead"], result["concurrent"]
        # the floor: timed in the same loop as the host, against the same direct calls
        floor = lone["beside"]["floor"]
        assert floor["side"]["last"]["p50_ms"] > 0
        assert floor["cpu_ms_per_call"] is not None
        # a floor phase in each round, beside direct's and the host's
        assert sorted(p["side"] for p in crowd["phases"]) == ["direct", "floor", "host"]
        assert crowd["beside"]["floor"]["cpu_ms_per_call"]["floor"] >= 0
    # the agent over HTTP: beside its stdio server only (over HTTP that is direct itself)
    assert list(results[0]["overhead"]["beside"]) == ["floor", "agent_over_http"]
    assert list(results[1]["overhead"]["beside"]) == ["floor"]
