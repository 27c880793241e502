"""The MCP-endpoint bench still runs (tiny, no timing checked): bench/mcp_endpoint.py end to
end, a stdio and a Streamable HTTP server, each call through the host checked as recorded."""

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
    assert "calls through the host, one row each, all checked" in printed
    assert [r["server"] for r in json.loads(report.read_text())["results"]] == ["stdio", "http"]
