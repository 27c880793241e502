"""`wopeval run WORKFLOW_ID`: record a run from the CLI (exit 0 completed, 1 failed, 4 error)."""

from __future__ import annotations

import json
from pathlib import Path

from ._support import ServedHost

COUNTER = "conformance-agent-counter"


def test_a_completed_run_prints_its_id_status_and_decision(served: ServedHost) -> None:
    done = served.cli(
        "run", "cli-lookup", "--input", '{"lookup": "order-7"}', "--tag", "prod", "--tag", "cli"
    )
    assert done.code == 0, done.stderr
    run_id, status, decision = done.stdout.split()
    assert status == "completed"
    assert decision == 'decision="order-7-value"'
    with served.http() as http:
        snapshot = http.get(f"/runs/{run_id.replace('/', '~2F')}").json()
    assert snapshot["tags"] == ["prod", "cli"]
    assert snapshot["inputs"] == {"lookup": "order-7"}


def test_inputs_from_a_file_and_json_output(served: ServedHost, tmp_path: Path) -> None:
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps({"calls": [], "answer": {"ok": True}}))
    done = served.cli("run", COUNTER, "--input", f"@{inputs}", "--json")
    assert done.code == 0, done.stderr
    snapshot = json.loads(done.stdout)
    assert snapshot["status"] == "completed"
    assert snapshot["outputs"] == {"agent": {"decision": {"ok": True}}}


def test_a_failed_run_exits_1_and_says_why(served: ServedHost) -> None:
    done = served.cli("run", "cli-raises", "--input", "{}")
    assert done.code == 1, (done.stdout, done.stderr)
    assert " failed " in done.stdout
    assert "error=agent_failed: agent cli.raises raised KeyError: 'city'" in done.stdout


def test_no_wait_returns_once_the_host_accepted_the_run(served: ServedHost) -> None:
    done = served.cli("run", COUNTER, "--input", '{"calls": [], "answer": 1}', "--no-wait")
    assert done.code == 0, done.stderr
    run_id, status = done.stdout.split()
    assert run_id.startswith("clitest/")
    assert status in ("pending", "running")


def test_bad_input_and_an_unknown_workflow_exit_4(served: ServedHost, tmp_path: Path) -> None:
    not_json = served.cli("run", COUNTER, "--input", "{calls")
    assert not_json.code == 4
    assert "--input" in not_json.stderr
    not_object = served.cli("run", COUNTER, "--input", "[1]")
    assert not_object.code == 4
    missing = served.cli("run", COUNTER, "--input", f"@{tmp_path / 'absent.json'}")
    assert missing.code == 4
    unknown = served.cli("run", "no-such-workflow")
    assert unknown.code == 4
    assert "not a workflow of this host" in unknown.stderr
