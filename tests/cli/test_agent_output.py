"""What an agent process says, and runs that recorded nothing, on every surface.

Real agent processes (`agent_output/agent.py`) on a real `wopeval serve` per
backend: a failing agent's stderr is kept with its invocation, redacted (its
token, the project's configured keys, `Bearer` values and provider-shaped keys
never reach the store or any surface) and cut to its last 16 KiB, and shown
by `wopeval run`, `runs show`, the invocation routes, the dashboard and, for an
eval trial, `explain`. The decision travels through `WOPEVAL_DECISION_FILE`,
which output printed after it cannot corrupt, with stdout's last line as the
fallback. An idle run is flagged and left out of `suites from-runs` unless
`--include-idle`; an eval trial that skipped the model its source asked says so.
"""

from __future__ import annotations

import json
import re
import secrets
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import MetaData, create_engine, select

from _backends import Backend
from _model_server import ModelServer
from _processes import ServeOptions, ServeProcess
from _projects import write_agent_workflow
from wopeval.engine.recording.redaction import CUT_NOTE, KEPT_BYTES
from wopeval.wire import ids

from ._support import Result, ServedHost

HERE = Path(__file__).parent / "agent_output"
AGENT = HERE / "agent.py"
LAST_WORDS = "the agent gave up: these are its last words"
QUESTION = "agent-output: may I look the key up?"
KEY_ENV = "OUTPUT_MODEL_KEY"
MODES = ("noisy", "chatty", "plain", "link", "fifo", "idle", "tools", "model")
_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@dataclass(frozen=True)
class OutputHost:
    served: ServedHost
    other: ServedHost
    """Another tenant's key on the same host."""
    project: Path
    database_url: str
    configured: dict[str, str]
    """The project's configured secrets: the model upstream's key and a tool credential."""
    model: ModelServer


def _project(directory: Path, model_url: str, tool_credential: str) -> None:
    python = json.dumps(sys.executable)
    (directory / "output_tools.py").write_text((HERE / "output_tools.py").read_text())
    (directory / "workflows").mkdir()
    toml = f"""workflows = ["workflows/*.json"]

[[tools]]
name = "out:lookup"
kind = "python"
callable = "output_tools:lookup"

[[tools]]
name = "out:billing"
kind = "http"
url = "http://127.0.0.1:9/never-called"
credential = {{ value = "{tool_credential}" }}

[[agents]]
id = "output.python"
lane = "python"
callable = "output_tools:python_lookup"

[[agents]]
id = "output.hashed"
lane = "command"
wire_content = "hash"
command = [{python}, {json.dumps(str(AGENT))}, "noisy"]
"""
    agents = {f"output.{mode}": mode for mode in MODES} | {"output.python": "", "output.hashed": ""}
    for mode in MODES:
        toml += f"""
[[agents]]
id = "output.{mode}"
lane = "command"
command = [{python}, {json.dumps(str(AGENT))}, "{mode}"]
base_url = "{model_url}"
api_key_env = "{KEY_ENV}"
timeout_seconds = 60
"""
    for agent_id in agents:
        write_agent_workflow(directory, agent_id, "out-" + agent_id.removeprefix("output."))
    (directory / "wopeval.toml").write_text(toml)


@pytest.fixture(scope="module")
def output_host(backend: Backend, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OutputHost]:
    project = tmp_path_factory.mktemp(f"output-project-{backend.name}")
    data_dir = tmp_path_factory.mktemp(f"output-host-{backend.name}")
    configured = {
        "model key": "mk-" + secrets.token_hex(16),
        "tool credential": "tc-" + secrets.token_hex(16),
    }
    keys = {"out": "out_" + secrets.token_urlsafe(24), "other": "oth_" + secrets.token_urlsafe(24)}
    with ModelServer() as model:
        model.script.add(QUESTION, [{"content": "yes, look it up"}] * 10)
        _project(project, model.base_url, configured["tool credential"])
        # The agent finds the configured secrets here, to say them on stderr.
        (project / "secrets.json").write_text(json.dumps(configured))
        options = ServeOptions(
            data_dir,
            backend.new_database(),
            tuple(f"{tenant}={key}" for tenant, key in keys.items()),
            project,
            env=((KEY_ENV, configured["model key"]),),
        )
        serve = ServeProcess(options, data_dir / "serve.log")
        try:
            serve.wait_up()
            yield OutputHost(
                ServedHost(serve.url, keys["out"]),
                ServedHost(serve.url, keys["other"]),
                project,
                options.resolved_database_url(),
                configured,
                model,
            )
        finally:
            serve.stop()


def _run(host: OutputHost, workflow: str, inputs: dict[str, Any], *tags: str) -> Result:
    tagged = [option for tag in tags for option in ("--tag", tag)]
    return host.served.cli("run", workflow, "--input", json.dumps(inputs), *tagged)


def _run_id(done: Result) -> str:
    return done.stdout.split()[0]


def _stored(host: OutputHost, table: str) -> list[dict[str, Any]]:
    engine = create_engine(host.database_url)
    try:
        metadata = MetaData()
        metadata.reflect(engine, only=[table])
        with engine.connect() as connection:
            return [
                dict(row) for row in connection.execute(select(metadata.tables[table])).mappings()
            ]
    finally:
        engine.dispose()


def _whole_store(host: OutputHost) -> str:
    engine = create_engine(host.database_url)
    try:
        metadata = MetaData()
        metadata.reflect(engine)
        with engine.connect() as connection:
            rows = {
                name: [dict(row) for row in connection.execute(select(table)).mappings()]
                for name, table in metadata.tables.items()
            }
    finally:
        engine.dispose()
    return json.dumps(rows, default=str)


def _invocation(host: OutputHost, run_id: str) -> dict[str, Any]:
    (row,) = [row for row in _stored(host, "invocations") if row["run_id"] == run_id]
    return row


def _dashboard(host: OutputHost, run_id: str) -> str:
    with httpx.Client(base_url=host.served.url, trust_env=False, timeout=60.0) as browser:
        signed = browser.post("/ui/sign-in", data={"key": host.served.api_key})
        assert signed.status_code == 303, signed.text
        page = browser.get(f"/ui/runs/{ids.project(run_id)}")
    assert page.status_code == 200, page.text
    return page.text


def _leaks(text: str, secret_values: list[str]) -> list[str]:
    return [value for value in secret_values if value in text]


def test_a_failing_agent_says_why_redacted_and_cut_to_its_end_on_every_surface(
    output_host: OutputHost, tmp_path: Path
) -> None:
    host = output_host
    token_file = tmp_path / "token.json"
    done = _run(host, "out-noisy", {"fail": True, "tokenFile": str(token_file)})
    assert done.code == 1, done.stderr
    run_id = _run_id(done)
    said = json.loads(token_file.read_text())
    assert said["token"] in said["mcpUrl"]
    # Every secret the agent said: none may be kept or shown anywhere.
    said_secrets = [*said.values(), *host.configured.values()]

    assert "exited with status 1" in done.stdout
    assert "stderr of agent output.noisy" in done.stderr
    assert LAST_WORDS in done.stderr
    assert "[redacted]" in done.stderr
    assert "using the model key [redacted]" in done.stderr
    assert "Authorization: Bearer [redacted]" in done.stderr
    assert _leaks(done.stdout + done.stderr, said_secrets) == []

    # Kept with the invocation: redacted, its last 16 KiB after a line saying so.
    kept = _invocation(host, run_id)["stderr"]
    assert kept.startswith(CUT_NOTE + "\n")
    assert len(kept.removeprefix(CUT_NOTE + "\n").encode()) <= KEPT_BYTES
    assert kept.rstrip().endswith(LAST_WORDS)
    assert "filler line 0000" not in kept
    assert "filler line 0999" in kept
    assert (
        f"connecting to {host.served.url}/host/wopeval/mcp/[redacted] with key [redacted]" in kept
    )
    assert _leaks(_whole_store(host), said_secrets) == []

    shown = host.served.cli("runs", "show", run_id)
    assert shown.code == 0, shown.stderr
    assert "Invocations" in shown.stdout
    assert "AgentFailed" in shown.stdout
    assert LAST_WORDS in shown.stdout
    assert "filler line 0999" in shown.stdout
    as_json = json.loads(host.served.cli("runs", "show", run_id, "--json").stdout)
    (line,) = as_json["invocations"]
    assert (line["agentId"], line["outcome"], line["stderr"]) == ("output.noisy", "failed", "kept")
    assert as_json["stderr"] == {line["invocationId"]: kept}

    with host.served.http() as http:
        listing = http.get(f"/host/wopeval/runs/{ids.project(run_id)}/invocations")
        assert listing.status_code == 200, listing.text
        (routed,) = listing.json()["invocations"]
        assert routed["error"] == {
            "type": "AgentFailed", "message": "the agent's process exited with status 1"
        }  # fmt: skip
        read = http.get(
            f"/host/wopeval/runs/{ids.project(run_id)}/invocations/{routed['invocationId']}/stderr"
        )
        assert read.status_code == 200, read.text
        assert read.json()["stderr"] == kept
        unknown = http.get(f"/host/wopeval/runs/{ids.project(run_id)}/invocations/nope/stderr")
        assert unknown.status_code == 404
        assert unknown.json() == {
            "error": "not_found",
            "message": "No such invocation in this run.",
        }

    page = _dashboard(host, run_id)
    assert "Agent invocations" in page
    assert LAST_WORDS in page
    assert "[redacted]" in page
    assert _leaks(page, said_secrets) == []


def test_another_tenant_reads_no_invocation_and_is_refused_as_for_the_run(
    output_host: OutputHost, tmp_path: Path
) -> None:
    host = output_host
    run_id = _run_id(_run(host, "out-idle", {}))
    with host.served.http() as own:
        (line,) = own.get(f"/host/wopeval/runs/{ids.project(run_id)}/invocations").json()[
            "invocations"
        ]
    hex_id = run_id.partition("/")[2]
    with host.other.http() as other:
        for segment in (ids.project(run_id), ids.project(f"other/{hex_id}")):
            as_run = other.get(f"/runs/{segment}")
            for path in ("invocations", f"invocations/{line['invocationId']}/stderr"):
                refused = other.get(f"/host/wopeval/runs/{segment}/{path}")
                assert refused.status_code in (403, 404)
                assert (refused.status_code, refused.content) == (
                    as_run.status_code,
                    as_run.content,
                )


def test_hashed_agents_say_nothing_outside_the_host(
    output_host: OutputHost, tmp_path: Path
) -> None:
    host = output_host
    run_id = _run_id(_run(host, "out-hashed", {"fail": True, "tokenFile": str(tmp_path / "t")}))
    assert LAST_WORDS in _invocation(host, run_id)["stderr"]  # kept in the host
    with host.served.http() as http:
        (line,) = http.get(f"/host/wopeval/runs/{ids.project(run_id)}/invocations").json()[
            "invocations"
        ]
        assert line["stderr"] == "withheld"
        assert "message" not in line["error"]
        read = http.get(
            f"/host/wopeval/runs/{ids.project(run_id)}/invocations/{line['invocationId']}/stderr"
        ).json()
        assert read["withheld"] is True
        assert "stderr" not in read
    shown = host.served.cli("runs", "show", run_id)
    assert LAST_WORDS not in shown.stdout
    assert LAST_WORDS not in _dashboard(host, run_id)


def test_a_completed_run_keeps_what_its_agent_said_too(
    output_host: OutputHost, tmp_path: Path
) -> None:
    host = output_host
    done = _run(host, "out-noisy", {"tokenFile": str(tmp_path / "t.json")})
    assert done.code == 0, done.stderr
    assert 'decision={"said": "everything"}' in done.stdout
    assert LAST_WORDS not in done.stderr  # `run` prints what a failed agent said
    run_id = _run_id(done)
    shown = host.served.cli("runs", "show", run_id)
    assert LAST_WORDS in shown.stdout
    # What it said may quote its tools' results: erasing the run's content erases it too.
    with host.served.http() as http:
        erased = http.post(f"/host/wopeval/runs/{ids.project(run_id)}:erase-tool-content")
        assert erased.status_code == 200, erased.text
        (line,) = http.get(f"/host/wopeval/runs/{ids.project(run_id)}/invocations").json()[
            "invocations"
        ]
    assert "stderr" not in line
    assert _invocation(host, run_id)["stderr"] is None


def test_the_decision_file_wins_over_what_a_framework_prints_after_it(
    output_host: OutputHost,
) -> None:
    host = output_host
    done = _run(host, "out-chatty", {})
    assert done.code == 0, done.stdout + done.stderr
    assert 'decision={"answer": 42}' in done.stdout
    said = _invocation(host, _run_id(done))["stderr"]
    found = re.search(r"decision file (\S+) in a directory of mode (\d+)", said)
    assert found is not None, said
    assert found.group(2) == "700"
    assert not Path(found.group(1)).parent.exists(), "the private directory outlived the run"

    fallback = _run(host, "out-plain", {})
    assert fallback.code == 0, fallback.stderr
    assert 'decision={"answer": "plain"}' in fallback.stdout

    linked = _run(host, "out-link", {})
    assert linked.code == 1
    assert "WOPEVAL_DECISION_FILE cannot be read" in linked.stdout
    assert "tc-" not in linked.stdout  # the file the link named was never read
    piped = _run(host, "out-fifo", {})
    assert piped.code == 1
    assert "WOPEVAL_DECISION_FILE is not a regular file" in piped.stdout


def test_idle_runs_are_flagged_and_left_out_of_suites_unless_included(
    output_host: OutputHost, tmp_path: Path
) -> None:
    host = output_host
    tag = "idle-" + secrets.token_hex(4)
    idle = _run(host, "out-idle", {}, tag)
    assert idle.code == 0, idle.stderr
    idle_id = _run_id(idle)
    both = ("warning: agent output.idle made no tool call and made no model call though it "
            "was handed the model proxy (node agent)")  # fmt: skip
    assert both in idle.stderr
    tools = _run(host, "out-tools", {"key": "k1"}, tag)
    assert tools.code == 0, tools.stderr
    assert ("warning: agent output.tools made no model call though it was handed the model "
            "proxy") in tools.stderr  # fmt: skip
    # A python agent is handed the proxy only when it reads it; this one never does.
    python = _run(host, "out-python", {"key": "k2"}, tag)
    assert python.code == 0, python.stderr
    assert "warning" not in python.stderr
    model = _run(host, "out-model", {"key": "k3"}, tag)
    assert model.code == 0, model.stderr
    assert "warning" not in model.stderr

    shown = host.served.cli("runs", "show", idle_id)
    assert both in shown.stdout
    snapshot = json.loads(host.served.cli("runs", "show", idle_id, "--json").stdout)["run"]
    assert snapshot["extensions"]["wopeval.run"]["idle"] == [
        {
            "agentId": "output.idle",
            "nodeId": "agent",
            "reasons": ["no_tool_calls", "no_model_calls"],
        }
    ]
    assert "Idle: agent output.idle made no tool call" in _dashboard(host, idle_id)
    assert "Idle:" not in _dashboard(host, _run_id(model))

    out = tmp_path / "suite.json"
    suite = ("--suite-id", "out.evals.idle", "--version", "1.0.0", "-o", str(out))
    skipped = host.served.cli("suites", "from-runs", "--tag", tag, "--agent", "output.idle", *suite)
    assert skipped.code == 4
    assert (f"skipped run {idle_id}: it is idle: agent output.idle made no tool call and made no "
            "model call though it was handed the model proxy") in skipped.stderr  # fmt: skip
    assert "--include-idle keeps it" in skipped.stderr
    kept = host.served.cli("suites", "from-runs", "--tag", tag, "--agent", "output.idle",
                           "--include-idle", *suite)  # fmt: skip
    assert kept.code == 0, kept.stderr
    assert f"included idle run {idle_id} (--include-idle)" in kept.stderr
    assert "tasks         1" in kept.stdout
    named = host.served.cli("suites", "from-runs", idle_id, "--agent", "output.idle", *suite)
    assert named.code == 4
    assert f"run {idle_id} is idle" in named.stderr
    tools_id = _run_id(tools)
    partly = host.served.cli("suites", "from-runs", "--tag", tag, "--agent", "output.tools", *suite)
    assert partly.code == 4
    assert f"skipped run {tools_id}: it is idle: agent output.tools made no model call" in (
        partly.stderr
    )
    fine = host.served.cli("suites", "from-runs", "--tag", tag, "--agent", "output.model", *suite)
    assert fine.code == 0, fine.stderr
    assert "tasks         1" in fine.stdout


def test_an_eval_trial_says_what_its_agent_said_and_which_model_calls_it_skipped(
    output_host: OutputHost, tmp_path: Path
) -> None:
    host = output_host
    tag = "model-" + secrets.token_hex(4)
    source = _run(host, "out-model", {"key": "m1"}, tag)
    assert source.code == 0, source.stderr
    out = tmp_path / "model.json"
    made = host.served.cli("suites", "from-runs", "--tag", tag, "--agent", "output.model",
                           "--suite-id", "out.evals.model", "--version", "1.0.0",
                           "-o", str(out))  # fmt: skip
    assert made.code == 0, made.stderr
    assert host.served.cli("suites", "push", str(out)).code == 0
    fixture_runs = str(out.with_name("model.fixture-runs.json"))
    (host.project / "skip-model").touch()  # the changed agent: it no longer asks the model
    try:
        evaluated = host.served.cli("eval", "out.evals.model@1.0.0", "--agent", "output.model",
                                    "--fixture-runs", fixture_runs, "--json", "-")  # fmt: skip
    finally:
        (host.project / "skip-model").unlink()
    assert evaluated.code == 0, evaluated.stdout + evaluated.stderr
    result = json.loads(evaluated.stdout)
    (task,) = result["tasks"]
    note = "the agent made no model call where its source run made 1 model call"
    assert task["reason"] == f"passed; {note}"
    explained = host.served.cli("explain", result["runId"], task["taskId"])
    assert note in explained.stdout

    # An eval trial keeps what its agent said, redacted, and `explain` shows it.
    token_file = tmp_path / "t.json"
    failing = {
        "suiteId": "out.evals.noisy",
        "version": "1.0.0",
        "targetAgentId": "output.noisy",
        "modes": ["golden"],
        "tasks": [
            {
                "taskId": "noisy",
                "input": {"fail": True, "tokenFile": str(token_file)},
                "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "x"}},
            }
        ],
    }
    (tmp_path / "noisy.json").write_text(json.dumps(failing))
    assert host.served.cli("suites", "push", str(tmp_path / "noisy.json")).code == 0
    ran = host.served.cli("eval", "out.evals.noisy@1.0.0", "--agent", "output.noisy",
                          "--json", "-")  # fmt: skip
    assert ran.code == 1, ran.stdout + ran.stderr
    run_id = json.loads(ran.stdout)["runId"]
    why = host.served.cli("explain", run_id)
    assert why.code == 0, why.stderr
    assert "exited with status 1" in why.stdout
    assert LAST_WORDS in why.stdout
    assert "Authorization: Bearer [redacted]" in why.stdout
    said = json.loads(token_file.read_text())
    assert (
        _leaks(why.stdout + _whole_store(host), [*said.values(), *host.configured.values()]) == []
    )
    with host.served.http() as http:
        task = f"/host/wopeval/runs/{ids.project(run_id)}/tasks/noisy"
        assert LAST_WORDS in http.get(task).json()["trialDetails"][0]["stderr"]
        erased = http.post(f"/host/wopeval/runs/{ids.project(run_id)}:erase-tool-content")
        assert erased.status_code == 200, erased.text
        assert "stderr" not in http.get(task).json()["trialDetails"][0]
