"""One framework's agent through the loop a team runs (docs/ci.md), command by command.

Production records three runs of the agent on the shared `wopeval serve`, started
together as traffic starts them (`POST /runs` with a tag), each a real model
conversation (the strict model server) and real tool calls (the orders MCP
server). Then, as the scheduled job and a pull request would:
`recordings export` next to the live host, `recordings import` into a fresh
SQLite store, `suites from-runs`, the baseline `eval --offline --replay-model`
tagged `main`, and the same eval of a checkout whose prompt changed, judged
against `latest:main`: exit 2, every task failing on its model replay miss.
Neither the model server nor the MCP server hears one request from any replay.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from openwop_client.wire_id import project_id

from _model_server import ModelServer
from _processes import ServeOptions, ServeProcess
from cli._support import Result, run_cli

from ._orders import CountingOrdersServer

REPOSITORY = Path(__file__).resolve().parents[2]
EXAMPLE = REPOSITORY / "examples" / "frameworks"
VENVS = (REPOSITORY / ".venv-frameworks-mcp1", REPOSITORY / ".venv-frameworks-openai2")
"""What `make frameworks` builds; the Agents SDK, PydanticAI and Anthropic agents run on the
project's own virtualenv (its `examples` extra)."""
ORDERS = {
    "A-1001": {"action": "refund", "amount": 40.0},
    "A-1002": {"action": "wait", "status": "shipped"},
    "A-1003": {"action": "escalate", "reason": "over the auto-refund limit"},
}
"""The production inputs and the decisions the scripted model leads each agent to."""
TOOL_CALLS = 4
"""What production asks of the orders server per framework: three lookups and one refund."""
PRODUCTION_TENANT = "prod"
REGRESSED = 2
COMMAND_TIMEOUT_SECONDS = 600.0
"""A command runs up to three framework processes at once, each importing its framework."""
TIER_TIMEOUT = pytest.mark.timeout(1800)
"""A framework's whole loop (pytest-timeout's per-test limit): its first test also starts the
tier's production host, and each runs six commands that start framework processes."""
CHAT, RESPONSES, MESSAGES = "/v1/chat/completions", "/v1/responses", "/v1/messages"
"""The model API paths the model server serves; each agent speaks one of them."""


@dataclass(frozen=True)
class Tier:
    """What the tier's tests share: the production host and the servers it talks to."""

    production: ServeProcess
    production_key: str
    options: ServeOptions
    orders: CountingOrdersServer
    model: ModelServer
    calls: Path
    """The orders server's log of every tools/call it received."""

    def tool_calls(self) -> int:
        if not self.calls.exists():
            return 0
        return len(self.calls.read_text(encoding="utf-8").splitlines())

    def model_requests(self) -> int:
        """The model server's own count of the requests it received (`GET /_stats`)."""
        with httpx.Client(trust_env=False, timeout=10.0) as client:
            stats = client.get(f"{self.model.root_url}/_stats")
        assert stats.status_code == 200, stats.text
        requests: int = stats.json()["requests"]
        return requests


def checkout(directory: Path, orders: CountingOrdersServer, model: ModelServer) -> Path:
    """A copy of examples/frameworks as a team's checkout: its MCP and model URLs pointed at
    the tier's servers, its virtualenv paths made absolute (the copy lives elsewhere)."""
    project = directory / "frameworks"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("__pycache__", "recorded"))
    manifest = project / "wopeval.toml"
    text = manifest.read_text(encoding="utf-8")
    text = text.replace("http://127.0.0.1:8791/mcp", orders.url)
    text = text.replace("http://127.0.0.1:8792", model.root_url)
    text = text.replace('"../../.venv-frameworks-', f'"{REPOSITORY}/.venv-frameworks-')
    manifest.write_text(text, encoding="utf-8")
    return project


def _env() -> dict[str, str]:
    # `python` in the manifest is this virtualenv's (where the examples extra is installed).
    return {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def _cli(*args: str) -> Result:
    return run_cli(*args, env=_env(), timeout=COMMAND_TIMEOUT_SECONDS)


def record(tier: Tier, framework: str, *, api: str, streamed: bool) -> None:
    """Production: one run per order, tagged `prod-FRAMEWORK`, started together; every model
    request of the agent went to `api`, streamed or whole as said."""
    before, asked = tier.tool_calls(), len(tier.model.script.received)
    with tier.production.http(tier.production_key) as http:
        started = {}
        for order in ORDERS:
            body = {"workflowId": f"desk-{framework}", "inputs": {"order_id": order},
                    "tags": [f"prod-{framework}"]}  # fmt: skip
            created = http.post("/runs", json=body)
            assert created.status_code == 201, created.text
            started[order] = created.json()["runId"]
        for order, run_id in started.items():
            snapshot = _ended(http, run_id)
            assert snapshot["status"] == "completed", _said(tier, run_id)
            outputs = snapshot["extensions"]["wopeval.run"]["outputs"]
            assert outputs == {"decide": {"decision": ORDERS[order]}}, snapshot
    assert tier.tool_calls() - before == TOOL_CALLS
    requests = tier.model.script.received[asked:]
    assert {request.path for request in requests} == {api}
    assert {request.body.get("stream") is True for request in requests} == {streamed}


def _ended(http: httpx.Client, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + COMMAND_TIMEOUT_SECONDS
    while True:
        response = http.get(f"/runs/{project_id(run_id)}")
        assert response.status_code == 200, response.text
        snapshot: dict[str, Any] = response.json()
        if snapshot["status"] not in ("pending", "running"):
            return snapshot
        assert time.monotonic() < deadline, f"run {run_id} never ended: {snapshot}"
        time.sleep(0.2)


def _said(tier: Tier, run_id: str) -> str:
    """The failed run as `wopeval runs show` tells it: what its agent said included."""
    shown = _cli("runs", "show", run_id, "--url", tier.production.url,
                 "--api-key", tier.production_key)  # fmt: skip
    return shown.stdout + shown.stderr


def replay(tier: Tier, framework: str, workdir: Path) -> None:
    """The scheduled job's baseline and a pull request's changed prompt, offline and with
    the model pinned: no request reaches the model server or the MCP server."""
    agent, tag = f"desk.{framework}", f"prod-{framework}"
    store = ["--data-dir", str(workdir / "ci-store")]
    bundle = workdir / "prod.zip"
    production = ["--database-url", tier.options.resolved_database_url()]
    exported = _cli("recordings", "export", "--tag", tag, "--tenant", PRODUCTION_TENANT,
                    *production, "-o", str(bundle))  # fmt: skip
    assert exported.code == 0, exported.stdout + exported.stderr

    model_requests, mcp_requests = tier.model_requests(), tier.orders.requests
    imported = _cli("recordings", "import", str(bundle), *store)
    assert imported.code == 0, imported.stdout + imported.stderr
    project = checkout(workdir, tier.orders, tier.model)
    suite = project / "recorded" / f"{framework}.json"
    made = _cli("suites", "from-runs", "--tag", tag, "--suite-id", f"desk.{framework}.evals.prod",
                "--version", "1.0.0", "--agent", agent, "--expect", "exact", "-o", str(suite),
                *store)  # fmt: skip
    assert made.code == 0, made.stdout + made.stderr
    fixture_runs = suite.with_name(f"{framework}.fixture-runs.json")
    assert len(json.loads(fixture_runs.read_text(encoding="utf-8"))) == len(ORDERS)
    pinned = [str(suite), "--agent", agent, "--fixture-runs", str(fixture_runs), "--offline",
              "--replay-model", "--project", str(project), *store]  # fmt: skip

    baseline = _cli("eval", *pinned, "--tag", "main")
    assert baseline.code == 0, baseline.stdout + baseline.stderr
    assert f"({len(ORDERS)}/{len(ORDERS)} tasks passed)" in baseline.stdout, baseline.stdout
    assert "Fixture misses   0" in baseline.stdout, baseline.stdout
    assert "Live tool calls  0" in baseline.stdout, baseline.stdout

    shutil.copy(EXAMPLE / "changed" / "prompt.md", project / "prompt.md")
    changed = _cli("eval", *pinned, "--baseline", "latest:main")
    assert changed.code == REGRESSED, changed.stdout + changed.stderr
    assert changed.stdout.count("model replay miss") >= len(ORDERS), changed.stdout
    assert "Live tool calls  0" in changed.stdout, changed.stdout

    assert tier.model_requests() == model_requests, "a replay reached the model server"
    assert tier.orders.requests == mcp_requests, "a replay reached the MCP server"


def run_the_loop(tier: Tier, framework: str, workdir: Path, *, api: str, streamed: bool) -> None:
    record(tier, framework, api=api, streamed=streamed)
    replay(tier, framework, workdir)
