"""`wopeval init`: the project it writes works with no edit, and it refuses what it cannot do.

Each case inits a project in a fresh directory, starts what the project's comments
say to start (an http agent's or tool's service; for an LLM agent, the provider the
shell names: the strict local model stand-in), then runs, as a user would from that
directory, `wopeval run`, `suites from-runs` and the project's offline `[[evals]]`
entry, on SQLite or PostgreSQL.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from _backends import PostgresDatabases
from _model_server import ModelScript, ModelServer
from _processes import free_port

from ._support import Result, run_cli

INPUT = {"order_id": "A-1001"}
DECISION = {"order_id": "A-1001", "status": "delivered", "action": "close"}
USAGE_ERROR = 4
SERVICE_START_SECONDS = 30.0


def scripted_model() -> ModelScript:
    """The stand-in provider: the scaffold's conversation, for either tool name it may offer
    (its prompt names the tool, which tells the two apart)."""
    script = ModelScript()
    user = json.dumps(INPUT, sort_keys=True)
    for offered in ("orders__lookup_order", "lookup_order"):
        script.add(user, [
            {"tool_calls": [{"name": offered, "arguments": INPUT}]},
            {"json": DECISION},
        ], system_contains=f"with the {offered} tool")  # fmt: skip
    return script


@pytest.fixture(scope="module")
def model() -> Iterator[ModelServer]:
    with ModelServer(scripted_model()) as server:
        yield server


@dataclass(frozen=True)
class Case:
    kind: str
    tool: str
    store: str
    framework: str | None = None

    @property
    def flags(self) -> list[str]:
        framework = ["--framework", self.framework] if self.framework else []
        return ["--kind", self.kind, *framework, "--tool", self.tool]


CASES = [
    Case("python", "python", "sqlite"),
    Case("python", "mcp", "postgres"),
    Case("command", "http", "sqlite"),
    Case("command", "mcp", "postgres"),
    Case("http", "mcp", "sqlite"),
    Case("http", "python", "postgres"),
    Case("llm", "mcp", "sqlite", "openai"),
    Case("llm", "python", "postgres", "openai-agents"),
    Case("llm", "http", "sqlite", "pydantic-ai"),
]


def _service(script: Path, port: int) -> subprocess.Popen[bytes]:
    """One of the scaffold's services, started as its comment says, awaited on its port."""
    process = subprocess.Popen(
        [sys.executable, script.name, "--port", str(port)], cwd=script.parent
    )
    deadline = time.monotonic() + SERVICE_START_SECONDS
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process
        except OSError:
            assert process.poll() is None, f"{script.name} exited"
            assert time.monotonic() < deadline, f"{script.name} did not come up"
            time.sleep(0.1)


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=[pytest.mark.postgres] if c.store == "postgres" else [],
                  id=f"{c.kind}-{c.framework or ''}-{c.tool}-{c.store}".replace("--", "-"))
     for c in CASES],
)  # fmt: skip
def test_the_scaffold_runs_records_and_replays_with_no_edit(
    case: Case, tmp_path: Path, model: ModelServer, request: pytest.FixtureRequest
) -> None:
    agent_port, tool_port = free_port(), free_port()
    project = tmp_path / "my-agent"
    made = run_cli("init", str(project), *case.flags,
                   "--agent-port", str(agent_port), "--tool-port", str(tool_port))  # fmt: skip
    assert made.code == 0, made.stderr
    env = {"WOPEVAL_PROJECT": str(project), "WOPEVAL_DATA_DIR": str(tmp_path / "data"),
           "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}  # fmt: skip
    if case.store == "postgres":
        databases: PostgresDatabases = request.getfixturevalue("postgres_databases")
        env["WOPEVAL_DATABASE_URL"] = databases.create()
    if case.kind == "llm":
        env |= {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "sk-local"}
    services, tools = [], []
    if case.kind == "http":
        services.append(_service(project / "agent_service.py", agent_port))
    if case.tool == "http":
        tools.append(_service(project / "tool_service.py", tool_port))
        services += tools

    def cli(*args: str) -> Result:
        return run_cli(*args, cwd=project, env=env)

    try:
        recorded = cli("run", "my-agent", "--input", json.dumps(INPUT), "--tag", "prod")
        assert recorded.code == 0, recorded.stdout + recorded.stderr
        assert f"completed decision={json.dumps(DECISION)}" in recorded.stdout
        # As wopeval.toml's comment says: a command or http agent that asks no model has its
        # runs flagged idle, kept by --include-idle.
        idle = ["--include-idle"] if case.kind in ("command", "http") else []
        assert ("--include-idle" in (project / "wopeval.toml").read_text()) == bool(idle)
        suite = cli("suites", "from-runs", "--tag", "prod", "--suite-id", "my-agent.evals.prod",
                    "--version", "1.0.0", "--agent", "my-agent", *idle,
                    "-o", "recorded/prod.json")  # fmt: skip
        assert suite.code == 0, suite.stdout + suite.stderr
        for service in tools:  # the replay must not need them
            service.terminate()
            service.wait(timeout=30)
        before = model.stats.requests
        baseline = cli("eval", "prod", "--tag", "main")
        assert baseline.code == 0, baseline.stdout + baseline.stderr
        assert "1.00 (1/1 tasks passed)" in baseline.stdout
        assert "Live tool calls  0" in baseline.stdout
        assert model.stats.requests == before  # the LLM agent's model answers were replayed
    finally:
        for service in services:
            service.kill()
            service.wait(timeout=30)


def test_a_python_scaffold_runs_its_one_task_suite(tmp_path: Path) -> None:
    made = run_cli("init", str(tmp_path), "--kind", "python", "--tool", "mcp")
    assert made.code == 0, made.stderr
    env = {"WOPEVAL_PROJECT": str(tmp_path), "WOPEVAL_DATA_DIR": str(tmp_path / ".wopeval")}
    smoke = run_cli("eval", "my-agent.evals.smoke@1.0.0", "--agent", "my-agent", "--offline",
                    cwd=tmp_path, env=env)  # fmt: skip
    assert smoke.code == 0, smoke.stdout + smoke.stderr
    assert "1.00 (1/1 tasks passed)" in smoke.stdout


def test_init_asks_what_no_flag_says(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(Path(sys.executable).with_name("wopeval")), "init", str(tmp_path)],
        input="llm\npydantic-ai\nmcp\n", capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "The agent's kind" in done.stdout
    assert "Its framework" in done.stdout
    assert "from pydantic_ai import Agent" in (tmp_path / "agent.py").read_text()
    assert "[[mcp_servers]]" in (tmp_path / "wopeval.toml").read_text()


@pytest.mark.parametrize(
    ("framework", "package"),
    [("openai", None), ("openai-agents", "openai-agents"),
     ("pydantic-ai", "pydantic-ai-slim[mcp,openai]")],
)  # fmt: skip
def test_init_names_the_package_an_agent_needs_beyond_wopeval(
    framework: str, package: str | None, tmp_path: Path
) -> None:
    """wopeval's own install has the plain openai SDK and mcp, not the frameworks: a user who
    picks one is told what to install before the first run fails on the agent's import."""
    done = run_cli("init", str(tmp_path), "--kind", "llm", "--framework", framework,
                   "--tool", "mcp")  # fmt: skip
    assert done.code == 0, done.stderr
    said = " ".join(done.stdout.split())
    if package is None:
        assert "pip install" not in said
    else:
        assert (
            f'agent.py needs {package}, which wopeval does not install: pip install "{package}"'
            in said
        )


def test_init_with_nobody_to_ask_says_which_flag_answers(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(Path(sys.executable).with_name("wopeval")), "init", str(tmp_path / "p")],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == USAGE_ERROR
    said = " ".join(done.stderr.split())
    assert "The agent's kind: no answer on stdin; give it as a flag" in said
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--kind", "java", "--tool", "mcp"],
         "unknown kind 'java'; known: python, command, llm, http"),
        (["--kind", "python", "--tool", "grpc"],
         "unknown tool 'grpc'; known: python, http, mcp"),
        (["--kind", "llm", "--framework", "autogen", "--tool", "mcp"],
         "unknown framework 'autogen'; known: openai, openai-agents, pydantic-ai"),
        (["--kind", "llm", "--framework", "langgraph", "--tool", "mcp"],
         "init does not scaffold langgraph yet"),
        (["--kind", "python", "--framework", "openai", "--tool", "mcp"],
         "--framework is for --kind llm only"),
    ],
)  # fmt: skip
def test_init_refuses_what_it_does_not_know_and_writes_nothing(
    flags: list[str], said: str, tmp_path: Path
) -> None:
    refused = run_cli("init", str(tmp_path / "p"), *flags)
    assert refused.code == USAGE_ERROR
    assert said in " ".join(refused.stderr.split())
    assert not (tmp_path / "p").exists()


def test_init_never_overwrites_a_file_unless_forced(tmp_path: Path) -> None:
    (tmp_path / "wopeval.toml").write_text("# mine\n")
    (tmp_path / "agent.py").write_text("# mine too\n")
    refused = run_cli("init", str(tmp_path), "--kind", "python", "--tool", "python")
    assert refused.code == USAGE_ERROR
    said = " ".join(refused.stderr.split())
    assert "agent.py, wopeval.toml" in said
    assert "--force" in said
    assert (tmp_path / "wopeval.toml").read_text() == "# mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agent.py", "wopeval.toml"]

    forced = run_cli("init", str(tmp_path), "--kind", "python", "--tool", "python", "--force")
    assert forced.code == 0, forced.stderr
    assert 'callable = "agent:decide"' in (tmp_path / "wopeval.toml").read_text()
    assert "async def decide" in (tmp_path / "agent.py").read_text()
