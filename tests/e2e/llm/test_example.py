"""`examples/llm-agent` runs as its README says, against the local scripted model server.

The project's one `base_url` line is pointed at the test server (as a user
points it at OpenAI, vLLM, llama.cpp or Ollama). Both agents — the openai
lane and the command-lane program on the plain `openai` client — are
recorded in production (once per module and backend), replayed through
`fixtureRuns` with zero live tool calls and the model live, and then, by
`wopeval eval --replay-model`, with the model answers replayed too: no request
reaches the model server; with `--offline` as well, the orders MCP server is
never started. Carried to a fresh store by `recordings export` and `recordings
import`, the recordings replay there `--offline --replay-model` with no model
server and no MCP server reachable, as a pull request's CI job runs them
(docs/ci.md).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from openwop_client.types import CreateRunRequest

from _backends import Backend
from _model_server import ModelScript, ModelServer
from _processes import free_port
from cli._support import run_cli
from wopeval.settings import Settings

from .._server import TENANT_A, ServerHandle, host_settings, running_host
from .._support import wait_terminal
from ..evals._evals import live_calls, run_eval
from ..mcp.conftest import CallLog

EXAMPLE = Path(__file__).parents[3] / "examples" / "llm-agent"
BASE_URL = "http://127.0.0.1:8792/v1"
ORDERS = {"delivered-small": "A-1001", "not-delivered": "A-1002", "delivered-large": "A-1003"}
AGENTS = {
    "orders.llm-desk": ("orders-refund-llm", "orders.evals.refunds-llm@1.0.0"),
    "orders.openai-client-agent": (
        "orders-refund-openai-client",
        "orders.evals.refunds-openai-client@1.0.0",
    ),
}


@pytest.fixture(scope="module")
def example_model() -> Iterator[ModelServer]:
    script = ModelScript()
    script.load(json.loads((EXAMPLE / "model-script.json").read_text(encoding="utf-8")))
    with ModelServer(script) as server:
        yield server


def _copy_of_the_example(directory: Path, base_url: str) -> Path:
    """A copy of examples/, its `base_url` lines pointed at `base_url`."""
    copy = directory / "examples"
    shutil.copytree(EXAMPLE.parent, copy, ignore=shutil.ignore_patterns("*.log", "__pycache__"))
    manifest = copy / "llm-agent" / "wopeval.toml"
    text = manifest.read_text()
    assert text.count(BASE_URL) == 2
    manifest.write_text(text.replace(BASE_URL, base_url))
    return copy / "llm-agent"


@pytest.fixture(scope="module")
def on_path() -> Iterator[None]:
    """The agents' `python` is this interpreter, and the host has an upstream key."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
        # The upstream key the proxy adds at egress: the stand-in, like OpenAI, wants one.
        patch.setenv("OPENAI_API_KEY", "sk-example")
        yield


@dataclass(frozen=True)
class Production:
    project: Path
    settings: Settings
    sources: dict[str, dict[str, str]]
    """Per agent, the production run of each task."""


def _record(host: ServerHandle, workflow: str) -> dict[str, str]:
    client = host.client()
    runs = {
        task: client.runs_create(
            CreateRunRequest(workflowId=workflow, inputs={"order_id": order})
        ).runId
        for task, order in ORDERS.items()
    }
    for run_id in runs.values():
        assert wait_terminal(client, run_id)[-1].type == "run.completed"
    return runs


@pytest.fixture(scope="module")
def production(
    backend: Backend,
    tmp_path_factory: pytest.TempPathFactory,
    example_model: ModelServer,
    on_path: None,
) -> Production:
    """Each agent's three production runs, recorded once for the module's tests."""
    directory = tmp_path_factory.mktemp(f"llm-example-{backend.name}")
    project = _copy_of_the_example(directory, example_model.base_url)
    settings = host_settings(backend, directory / "data", project=project)
    with running_host(settings, backend) as host:
        sources = {agent: _record(host, workflow) for agent, (workflow, _) in AGENTS.items()}
    return Production(project, settings, sources)


def test_the_llm_example_records_replays_and_pins_its_model(
    backend: Backend, production: Production, example_model: ModelServer
) -> None:
    orders_log = CallLog(production.project / "orders-calls.log")
    with running_host(production.settings, backend) as host:
        for agent, (_, suite_ref) in AGENTS.items():
            tool_calls, asked = orders_log.count(), len(example_model.script.received)
            with host.http() as http:
                replayed = run_eval(
                    host.client(), http, suite_ref, agent, fixtureRuns=production.sources[agent]
                )
                assert live_calls(http, replayed.run_id) == 0
            assert replayed.summary["passed"] is True, replayed.summary
            assert 0 < replayed.summary["totalCostUsd"] <= 0.05
            assert orders_log.count() == tool_calls, "the replay reached the orders server"
            # The model is live in this replay: each task asked it again, turn by turn.
            assert len(example_model.script.received) == asked + 7

    # The CLI's embedded host, told to replay the model too (the proxy's replay of the
    # command-lane agent is tested in test_model_proxy.py).
    asked = len(example_model.script.received)
    agent = "orders.llm-desk"
    settings = production.settings
    pinned = run_cli(
        "eval", AGENTS[agent][1], "--agent", agent, "--replay-model",
        *[f"--from-run={task}={run}" for task, run in production.sources[agent].items()],
        "--project", str(production.project), "--data-dir", str(settings.data_dir),
        "--database-url", settings.resolved_database_url(),
        "--api-key", settings.api_keys[TENANT_A],  # the tenant that recorded the sources
    )  # fmt: skip
    assert pinned.code == 0, pinned.stdout + pinned.stderr
    assert "Fixture misses   0" in pinned.stdout
    assert "Live tool calls  0" in pinned.stdout
    assert len(example_model.script.received) == asked, "a pinned model answer reached upstream"

    # Offline too: the orders server is never started, and the agent is offered the tools
    # its recordings were offered, so its model requests are those it made (docs/ci.md).
    tool_calls = orders_log.count()
    offline = run_cli(
        "eval", AGENTS[agent][1], "--agent", agent, "--replay-model", "--offline",
        *[f"--from-run={task}={run}" for task, run in production.sources[agent].items()],
        "--project", str(production.project), "--data-dir", str(settings.data_dir),
        "--database-url", settings.resolved_database_url(),
        "--api-key", settings.api_keys[TENANT_A],
    )  # fmt: skip
    assert offline.code == 0, offline.stdout + offline.stderr
    assert "(3/3 tasks passed)" in " ".join(offline.stdout.split()), offline.stdout
    assert "Fixture misses   0" in offline.stdout
    assert len(example_model.script.received) == asked, "an offline replay reached the model"
    assert orders_log.count() == tool_calls, "an offline replay reached the orders server"


def test_the_llm_example_replays_offline_from_a_bundle_with_no_provider_reachable(
    production: Production, example_model: ModelServer, tmp_path: Path
) -> None:
    bundle = tmp_path / "recordings.zip"
    settings = production.settings
    run_ids = [run for sources in production.sources.values() for run in sources.values()]
    exported = run_cli("recordings", "export", *run_ids, "-o", str(bundle),
                       "--data-dir", str(settings.data_dir),
                       "--database-url", settings.resolved_database_url())  # fmt: skip
    assert exported.code == 0, exported.stderr
    ci_store = ["--data-dir", str(tmp_path / "ci")]
    imported = run_cli("recordings", "import", str(bundle), *ci_store)
    assert imported.code == 0, imported.stderr

    # CI's copy of the project: its model is a port nothing listens on.
    ci_project = _copy_of_the_example(tmp_path, f"http://127.0.0.1:{free_port()}/v1")
    orders_log = CallLog(ci_project / "orders-calls.log")
    asked = len(example_model.script.received)
    for agent, (_, suite_ref) in AGENTS.items():
        # Imported under the default tenant `dev`, each run keeps its hex id.
        sources = production.sources[agent]
        as_dev = {task: "dev/" + run.partition("/")[2] for task, run in sources.items()}
        replayed = run_cli(
            "eval", suite_ref, "--agent", agent, "--offline", "--replay-model",
            *[f"--from-run={task}={run}" for task, run in as_dev.items()],
            "--project", str(ci_project), *ci_store,
        )  # fmt: skip
        assert replayed.code == 0, replayed.stdout + replayed.stderr
        assert "Fixture misses   0" in replayed.stdout
        assert "Live tool calls  0" in replayed.stdout
    assert len(example_model.script.received) == asked, "a replay reached the model server"
    assert orders_log.count() == 0, "a replay reached the orders server"
