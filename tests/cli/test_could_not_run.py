"""Exit 4, "could not run": a model provider that is down and a host that is not there end
the command with the cause and the fix in two lines, never exit 1 and never a traceback."""

from __future__ import annotations

import json
import re
import socket
import sys
from pathlib import Path

from _backends import Backend
from _model_server import ModelScript, ModelServer
from _processes import free_port
from wopeval.cli._exit import EXIT_CODES_HELP, ExitCode
from wopeval.cli.run import RUN_FAILED
from wopeval.client import provider_unavailable

from ._support import ServedHost, run_cli

DOCS = Path(__file__).parents[2] / "docs"
SUITE = "cli.down.evals.one@1.0.0"
RUBRIC_SUITE = "cli.down.evals.rubric@1.0.0"


def _closed_port() -> int:
    port = free_port()  # nothing listens there once the probe is closed
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0
    return port


AGENT_PROGRAM = """\
import json, sys
from openai import OpenAI

json.loads(sys.stdin.read())
asked = [{"role": "user", "content": "Decide."}]
answer = OpenAI(max_retries=1).chat.completions.create(model="gpt-4.1-mini", messages=asked)
print(json.dumps(answer.choices[0].message.content))
"""
"""A program of its own on the plain `openai` client: the host hands it its model proxy, and
its client tries once more after a failure, each attempt an exchange of its own."""

BROKEN_PROGRAM = """\
import sys
sys.stdin.read()
sys.exit("no decision: my own bug")
"""
"""A program that fails for its own reason, before asking any model."""

ASKER_PROGRAM = AGENT_PROGRAM + 'sys.exit("answered, and no decision all the same")\n'
"""A program that gets its model's answer and then fails for its own reason."""

WRITER_PROGRAM = """\
import json, sys
json.loads(sys.stdin.read())
print(json.dumps("Returns are accepted within 30 days."))
"""
"""A program whose answer is prose, for a rubric task's judge to score."""


def _llm_project(root: Path, base_url: str) -> Path:
    """An openai-lane agent whose model server is `base_url`, the same through the model
    proxy for a command agent, and a one-task suite either is evaluated on."""
    (root / "workflows").mkdir(parents=True)
    (root / "suites").mkdir()
    (root / "agent.py").write_text(AGENT_PROGRAM, encoding="utf-8")
    (root / "broken.py").write_text(BROKEN_PROGRAM, encoding="utf-8")
    (root / "asker.py").write_text(ASKER_PROGRAM, encoding="utf-8")
    (root / "writer.py").write_text(WRITER_PROGRAM, encoding="utf-8")
    (root / "wopeval.toml").write_text(
        'workflows = ["workflows/*.json"]\nsuites = ["suites/*.json"]\n\n'
        f'[[agents]]\nid = "down.desk"\nlane = "openai"\nbase_url = "{base_url}"\n'
        'model = "gpt-4.1-mini"\nsystem_prompt = "Decide."\nretries = 1\n\n'
        f'[[agents]]\nid = "down.program"\nlane = "command"\n'
        f'command = ["{sys.executable}", "agent.py"]\nbase_url = "{base_url}"\n\n'
        f'[[agents]]\nid = "down.broken"\nlane = "command"\n'
        f'command = ["{sys.executable}", "broken.py"]\nbase_url = "{base_url}"\n\n'
        f'[[agents]]\nid = "down.asker"\nlane = "command"\n'
        f'command = ["{sys.executable}", "asker.py"]\nbase_url = "{base_url}"\n\n'
        f'[[agents]]\nid = "down.writer"\nlane = "command"\n'
        f'command = ["{sys.executable}", "writer.py"]\n\n'
        f'[[judges]]\nid = "down.judge"\nmodel = "gpt-4.1-mini"\nbase_url = "{base_url}"\n'
        'retries = 0\nsuites = ["cli.down.evals.rubric"]\n',
        encoding="utf-8",
    )
    for workflow_id, agent in (
        ("desk", "down.desk"),
        ("program", "down.program"),
        ("broken", "down.broken"),
        ("asker", "down.asker"),
    ):
        workflow = {
            "id": workflow_id,
            "nodes": [{"id": "d", "type": "core.agent", "agentId": agent}],
        }
        (root / "workflows" / f"{workflow_id}.json").write_text(
            json.dumps(workflow), encoding="utf-8"
        )  # fmt: skip
    rubric = {
        "suiteId": "cli.down.evals.rubric", "version": "1.0.0", "modes": ["rubric"],
        "tasks": [{"taskId": "reply", "input": {"text": "Can I return it?"},
                   "expected": {"kind": "rubric",
                                "rubric": [{"criterion": "cites the return window",
                                            "weight": 1}]}}],
    }  # fmt: skip
    (root / "suites" / "rubric.json").write_text(json.dumps(rubric), encoding="utf-8")
    suite = {
        "suiteId": "cli.down.evals.one", "version": "1.0.0", "modes": ["golden"],
        "tasks": [{"taskId": "ticket", "input": {"text": "hello"},
                   "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "ok"}}}],
    }  # fmt: skip
    (root / "suites" / "one.json").write_text(json.dumps(suite), encoding="utf-8")
    return root


def test_an_eval_whose_model_provider_is_down_exits_4_with_the_cause_and_the_fix(
    backend: Backend, tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    project = _llm_project(tmp_path / "project", url)
    host = ["--project", str(project), "--data-dir", str(tmp_path / "data")]
    if (database := backend.new_database()) is not None:
        host += ["--database-url", database]
    json_report = tmp_path / "report.json"
    result = run_cli(
        "eval", SUITE, "--agent", "down.desk", "--json", str(json_report), *host,
        env={"OPENAI_API_KEY": "sk-local"},
    )  # fmt: skip
    assert result.code == ExitCode.ERROR, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert "thresholds" not in result.stdout + result.stderr
    run_id = result.stderr.split("Eval run ", 1)[1].split()[0]
    error = result.stderr[result.stderr.index("error: ") :].splitlines()
    assert error == [
        f"error: model provider at {url} refused the connection (run {run_id}, task ticket, "
        "trial 0, 2 attempts); nothing was judged.",
        "  Is it running? Or set agent down.desk's base_url (or OPENAI_BASE_URL) in "
        "wopeval.toml to a server that answers.",
    ]
    assert not json_report.exists()  # nothing judged, so no verdict written
    # The host's log line is the one-line failure (the lane's retry loop is no agent bug).
    assert (
        f"the model API at {url} could not be reached: connection refused (after 2 attempts)"
        in result.stderr
    )

    # An agent program asking through the host's model proxy: the proxy recorded what the
    # provider did, so the same two lines, with the program's own setting to change.
    proxied = run_cli(
        "eval", SUITE, "--agent", "down.program", *host, env={"OPENAI_API_KEY": "sk-local"}
    )
    assert proxied.code == ExitCode.ERROR, proxied.stdout + proxied.stderr
    assert "Traceback" not in proxied.stderr  # the program's exit is said in one line
    assert f"error: model provider at {url} refused the connection (run " in proxied.stderr
    assert "Or set agent down.program's base_url (or OPENAI_BASE_URL)" in proxied.stderr

    # The run is stored: comparing it with another says the same, whichever side it is on.
    compared = run_cli("compare", run_id, run_id, *host)
    assert compared.code == ExitCode.ERROR, compared.stdout + compared.stderr
    assert f"refused the connection (run {run_id}, task ticket" in compared.stderr

    # A workflow run of the same agent records the same failure; its reason says where, and
    # the run's model exchanges (the host's model-calls route) say it was the provider's.
    run = run_cli("run", "desk", *host, env={"OPENAI_API_KEY": "sk-local"})
    assert run.code == ExitCode.ERROR, run.stdout + run.stderr
    assert f"the model API at {url} could not be reached: connection refused" in run.stdout
    assert "Traceback" not in run.stderr
    workflow_run = run.stdout.split()[0]
    assert run.stderr[run.stderr.index("error: ") :].splitlines() == [
        f"error: model provider at {url} refused the connection (run {workflow_run}, node d, "
        "2 attempts); the run failed.",
        "  Is it running? Or set agent down.desk's base_url (or OPENAI_BASE_URL) in "
        "wopeval.toml to a server that answers.",
    ]

    # A program's run through the model proxy: the proxy's exchange says the same.
    program = run_cli("run", "program", *host, env={"OPENAI_API_KEY": "sk-local"})
    assert program.code == ExitCode.ERROR, program.stdout + program.stderr
    assert f"error: model provider at {url} refused the connection (run " in program.stderr
    assert "Or set agent down.program's base_url (or OPENAI_BASE_URL)" in program.stderr

    # A program that fails for its own reason, on the same down provider: its run failed.
    broken = run_cli("run", "broken", *host, env={"OPENAI_API_KEY": "sk-local"})
    assert broken.code == RUN_FAILED, broken.stdout + broken.stderr
    assert broken.stdout.split()[1] == "failed"
    assert "no decision: my own bug" in broken.stderr
    assert "error:" not in broken.stderr
    assert "model provider" not in broken.stderr

    # A rubric task whose judge's provider is down: the agent decided, the judge could not
    # score it, so nothing was judged (exit 4), naming the judge's setting.
    judged = run_cli(
        "eval", RUBRIC_SUITE, "--agent", "down.writer", *host, env={"OPENAI_API_KEY": "sk-local"}
    )
    assert judged.code == ExitCode.ERROR, judged.stdout + judged.stderr
    judge_run = judged.stderr.split("Eval run ", 1)[1].split()[0]
    assert judged.stderr[judged.stderr.index("error: ") :].splitlines() == [
        f"error: model provider at {url} refused the connection (run {judge_run}, task reply, "
        "trial 0); nothing was judged.",
        "  Is it running? Or set the base_url of judge down.judge in wopeval.toml to a server "
        "that answers.",
    ]


def test_a_provider_that_answers_on_a_retry_is_no_outage(tmp_path: Path) -> None:
    """A 503, then the answer: the agent decided (wrongly here), so the verdict stands, exit 1,
    for the lane's retry and for a program's own client's retry through the proxy alike."""
    script = ModelScript()
    with ModelServer(script) as server:
        project = _llm_project(tmp_path / "project", server.base_url)
        for agent in ("down.desk", "down.program"):
            # A fresh conversation each, its first answer the 503: the lane's user message is
            # the task's input, the program's its own.
            for user in ('{"text":"hello"}', "Decide."):
                script.add(user, [{"content": "normal", "fail_first": [{"status": 503}]}])
            result = run_cli(
                "eval", SUITE, "--agent", agent, "--project", str(project),
                "--data-dir", str(tmp_path / "data"), "--json", "-",
                env={"OPENAI_API_KEY": "sk-local"},
            )  # fmt: skip
            assert result.code == ExitCode.THRESHOLD_FAILED, (agent, result.stderr)
            (task,) = json.loads(result.stdout)["tasks"]
            assert task["reason"] == (
                'exact: the decision "normal" differs from the expected value "ok"'
            )
            assert task["passedTrials"] == 0

        # A recording of a program that got its answer on its retry, then failed on its own:
        # the 503 was not the last word, so the run failed for the agent (exit 1).
        script.add("Decide.", [{"content": "normal", "fail_first": [{"status": 503}]}])
        run = run_cli(
            "run", "asker", "--project", str(project), "--data-dir", str(tmp_path / "data"),
            env={"OPENAI_API_KEY": "sk-local"},
        )  # fmt: skip
        assert run.code == RUN_FAILED, run.stdout + run.stderr
        assert "answered, and no decision all the same" in run.stderr
        assert "model provider" not in run.stderr


def test_a_host_url_that_nothing_answers_exits_4_with_the_fix() -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    for args in (["eval", SUITE, "--agent", "a"], ["runs", "list"], ["runs", "events", "x/y"]):
        result = run_cli(*args, "--url", url, "--api-key", "k")
        assert result.code == ExitCode.ERROR, (args, result.stderr)
        assert "Traceback" not in result.stderr
        lines = result.stderr.strip().splitlines()
        assert lines[0].startswith(f"error: cannot reach the host at {url}: "), lines
        assert "Connection refused" in lines[0]
        assert lines[1:] == [
            "  Is `wopeval serve` running there? Check --url (or WOPEVAL_URL), or drop it to "
            "start an embedded host."
        ]


def test_a_key_the_host_does_not_accept_exits_4_with_the_fix(served: ServedHost) -> None:
    result = run_cli("runs", "list", "--url", served.url, "--api-key", "wop_not_this_hosts")
    assert result.code == ExitCode.ERROR, result.stderr
    assert result.stderr.strip().splitlines() == [
        "error: the host refused: A valid bearer API key is required. (HTTP 401 unauthenticated).",
        "  Check --api-key (or WOPEVAL_API_KEY): the host does not accept this key (a host "
        "started without keys takes DATA_DIR/dev-api-key).",
    ]


def test_the_exit_codes_docs_ci_lists_are_the_commands_own() -> None:
    """docs/ci.md says what `--help` says, code by code; the tests above and
    test_exit_codes.py show each code coming from a real run."""
    documented = " ".join((DOCS / "ci.md").read_text(encoding="utf-8").split())
    clauses = re.findall(r"(\d) ([^;.]+(?:\([^)]*\))?)", EXIT_CODES_HELP.split("Precedence")[0])
    assert [code for code, _ in clauses] == ["0", "1", "2", "3", "4"]
    assert {int(code) for code, _ in clauses} == {int(code) for code in ExitCode}
    for code, meaning in clauses:
        assert f"{code} {meaning}" in documented, (code, meaning)
    assert "Precedence: 4 > 2 > 1 > 3 > 0" in documented


def test_which_recorded_model_failures_are_the_providers() -> None:
    down: list[dict[str, object]] = [
        {"code": "unreachable", "cause": "connection refused"},
        {"code": "timeout"},
        {"status": 503},
        {"status": 500, "type": "server_error"},
        {"status": 429},
    ]
    asked_wrong: list[dict[str, object]] = [
        {"status": 400},
        {"status": 401},
        {"status": 404},
        {"code": "malformed"},
        {"code": "incomplete"},
        {"code": "no_upstream"},
        {},
    ]
    assert all(provider_unavailable(error) for error in down)
    assert not any(provider_unavailable(error) for error in asked_wrong)
