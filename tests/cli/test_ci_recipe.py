"""docs/ci.md, run as written: production records, a scheduled job builds the suite and
main's baseline, a pull request's agent is replayed offline and judged against it.

The test takes the shell block and the two workflows out of docs/ci.md and runs
their `run:` steps with bash, in order, as GitHub would (`bash -e -o pipefail`),
with the workflow's and the step's `env`. Only the steps GitHub alone can run
are done by hand: installing wopeval (this checkout's is on PATH) and fetching
the producer's artifact (a copy). Production is a real `wopeval serve` of
examples/mcp-tools on SQLite or PostgreSQL with the orders credential; the
producer and the pull request work in separate git clones and SQLite stores,
without the credential.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from _backends import Backend
from _processes import ServeOptions, ServeProcess, child_env, git

REPOSITORY = Path(__file__).resolve().parents[2]
DOC = REPOSITORY / "docs" / "ci.md"
EXAMPLE = Path("examples") / "mcp-tools"
ORDERS_TOKEN = "orders-token-of-production"
BY_HAND = frozenset({"Install wopeval", "Fetch the latest recordings"})
"""Steps only GitHub can run; the test does what they do."""
REGRESSED = 2
# Every step of the documented job, each allowed STEP_TIMEOUT_SECONDS: more than the default
# per-test time-out (pyproject.toml).
WHOLE_TEST_TIMEOUT = pytest.mark.timeout(900)
STEP_TIMEOUT_SECONDS = 300.0


@dataclass(frozen=True)
class Step:
    name: str
    script: str
    env: dict[str, str]


def documented(marker: str) -> str:
    """The fenced block docs/ci.md puts right after `<!-- ci-test: MARKER -->`."""
    pattern = rf"<!-- ci-test: {re.escape(marker)} -->\n```\w+\n(.*?)\n```"
    found = re.search(pattern, DOC.read_text(encoding="utf-8"), re.DOTALL)
    assert found, f"docs/ci.md has no block marked {marker!r}"
    return found.group(1)


def run_steps(marker: str, expressions: Mapping[str, str]) -> list[Step]:
    """The `run:` steps of the one job of the workflow marked MARKER, its `${{ … }}`
    expressions replaced from `expressions` (an unknown one fails the test)."""
    workflow: dict[str, Any] = yaml.safe_load(documented(marker))
    (job,) = workflow["jobs"].values()

    def resolve(value: str) -> str:
        return re.sub(r"\$\{\{\s*([\w.]+)\s*\}\}", lambda m: expressions[m.group(1)], value)

    steps = []
    for step in job["steps"]:
        if "run" not in step:
            continue
        env = {key: resolve(str(value)) for key, value in workflow.get("env", {}).items()}
        env.update({key: resolve(str(value)) for key, value in step.get("env", {}).items()})
        steps.append(Step(step["name"], step["run"], env))
    return steps


def bash(script: str, cwd: Path, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    """SCRIPT as a GitHub `run:` step runs it, with this checkout's wopeval on PATH and
    none of the production credential."""
    environment = child_env(env)
    environment.pop("ORDERS_TOKEN", None)
    environment["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environment['PATH']}"
    return subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT_SECONDS,
        check=False,
    )


def a_repository(root: Path) -> Path:
    """A git repository holding examples/mcp-tools as the team's project, on `main`."""
    origin = root / "origin"
    shutil.copytree(
        REPOSITORY / EXAMPLE,
        origin / EXAMPLE,
        ignore=shutil.ignore_patterns("recorded", "orders-calls.log", "__pycache__"),
    )
    (origin / ".gitignore").write_text(f"{EXAMPLE}/recorded/\n{EXAMPLE}/orders-calls.log\n")
    git(origin, "init", "-q", "-b", "main")
    git(origin, "add", "-A")
    git(origin, "commit", "-q", "-m", "the refund agent")
    return origin


def clone(origin: Path, where: Path) -> Path:
    git(where.parent, "clone", "-q", str(origin), where.name)
    return where


@WHOLE_TEST_TIMEOUT
def test_the_documented_ci_loop_catches_a_regression_offline(
    backend: Backend, tmp_path: Path
) -> None:
    origin = a_repository(tmp_path)
    main = clone(origin, tmp_path / "main")

    production_key = "wop_prod_" + secrets.token_hex(12)
    production = ServeOptions(
        tmp_path / "production",
        backend.new_database(),
        (f"prod={production_key}",),
        project=main / EXAMPLE,
        env=(
            ("ORDERS_TOKEN", ORDERS_TOKEN),
            ("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"),
        ),
    )
    serve = ServeProcess(production, tmp_path / "production.log")
    try:
        serve.wait_up()
        recorded = bash(
            documented("record"),
            main,
            {"WOPEVAL_URL": f"http://127.0.0.1:{serve.port}", "WOPEVAL_API_KEY": production_key},
        )
        assert recorded.returncode == 0, recorded.stderr
        lines = [line.split() for line in recorded.stdout.splitlines()]
        assert [line[1] for line in lines] == ["completed"] * 5, recorded.stdout
        orders = ["A-1001", "A-1002", "A-1003", "A-1001", "A-1003"]
        small_refunds = {
            line[0] for line, order in zip(lines, orders, strict=True) if order == "A-1001"
        }
        production_calls = (main / EXAMPLE / "orders-calls.log").read_text().splitlines()
        assert len(production_calls) == 7  # five lookups, two refunds

        # The scheduled job exports next to the live production host.
        secrets_of_github = {
            "secrets.PRODUCTION_DATABASE_URL": production.resolved_database_url(),
            "github.token": "unused-by-the-test",
        }
        for step in run_steps("producer", secrets_of_github):
            if step.name in BY_HAND:
                continue
            done = bash(step.script, main, step.env)
            assert done.returncode == 0, (step.name, done.stdout, done.stderr)
    finally:
        serve.stop()
    artifact = main / EXAMPLE / "recorded"
    assert sorted(path.name for path in artifact.iterdir()) == [
        "orders-prod.fixture-runs.json", "orders-prod.json", "recordings.zip",
    ]  # fmt: skip
    fixture_runs: dict[str, str] = json.loads(
        (artifact / "orders-prod.fixture-runs.json").read_text()
    )
    assert len(fixture_runs) == 5
    regressing = {task for task, run in fixture_runs.items() if
                  f"prod/{run.partition('/')[2]}" in small_refunds}  # fmt: skip
    assert len(regressing) == 2

    # The pull request lowers the auto-refund limit: a 40 EUR order is no longer refunded.
    pull_request = clone(origin, tmp_path / "pull-request")
    agent = pull_request / EXAMPLE / "refund_agent.py"
    agent.write_text(
        agent.read_text().replace("AUTO_REFUND_LIMIT = 100.0", "AUTO_REFUND_LIMIT = 30.0")
    )
    git(pull_request, "commit", "-q", "-am", "refund less without a human")
    revision = git(pull_request, "rev-parse", "HEAD")

    summary = tmp_path / "step-summary.md"
    outcomes = {}
    for step in run_steps("pull-request", secrets_of_github):
        if step.name == "Fetch the latest recordings":
            shutil.copytree(artifact, pull_request / EXAMPLE / "recorded")
            continue
        if step.name in BY_HAND:
            continue
        outcomes[step.name] = bash(
            step.script, pull_request, {**step.env, "GITHUB_STEP_SUMMARY": str(summary)}
        )
    replay = outcomes["Replay production against this pull request"]
    assert replay.returncode == REGRESSED, (replay.stdout, replay.stderr)
    assert "Baseline latest:main: dev/" in replay.stderr

    # Offline: the orders server heard nothing from the pull request's run.
    assert not (pull_request / EXAMPLE / "orders-calls.log").exists()
    markdown = summary.read_text()
    assert "- **Live tool calls:** 0" in markdown
    assert f"at `{revision}`" in markdown
    assert "tagged `main`" in markdown
    for task in regressing:
        assert f"| `{task}` |" in markdown
        assert "🔴 regressed" in next(
            line for line in markdown.splitlines() if f"| `{task}` |" in line
        )
        assert re.search(rf"- `{re.escape(task)}`.*over the auto-refund limit", markdown)
    junit = (pull_request / "reports" / "junit.xml").read_text()
    html = (pull_request / "reports" / "report.html").read_text()
    for task in regressing:
        assert task in junit
        assert task in html
    assert "over the auto-refund limit" in junit
    assert "over the auto-refund limit" in html
