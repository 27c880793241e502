"""`wopeval run WORKFLOW_ID`: record a run from the CLI (exit 0 completed, 1 failed, 4 error)."""

from __future__ import annotations

import json
import uuid
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


def test_runs_list_shows_tags_agents_and_timing_and_filters_and_pages(served: ServedHost) -> None:
    tag = f"listing-{uuid.uuid4().hex[:8]}"
    made = [
        served.cli("run", "cli-lookup", "--input", f'{{"lookup": "k{i}"}}', "--tag", tag)
        for i in range(3)
    ]
    run_ids = [done.stdout.split()[0] for done in made]
    assert all(done.code == 0 for done in made)

    table = served.cli("runs", "list", "--tag", tag, "--since", "1h")
    assert table.code == 0, table.stderr
    for run_id in run_ids:
        assert run_id in table.stdout
    assert tag in table.stdout
    assert "cli.good" in table.stdout
    assert " ms " in table.stdout

    first = json.loads(served.cli("runs", "list", "--tag", tag, "--limit", "2", "--json").stdout)
    assert [run["runId"] for run in first["runs"]] == run_ids[:0:-1]
    rest = served.cli("runs", "list", "--tag", tag, "--limit", "2", "--cursor",
                      first["nextCursor"], "--json")  # fmt: skip
    assert [run["runId"] for run in json.loads(rest.stdout)["runs"]] == run_ids[:1]
    every = json.loads(served.cli("runs", "list", "--tag", tag, "--limit", "1", "--all",
                                  "--json").stdout)  # fmt: skip
    assert [run["runId"] for run in every["runs"]] == run_ids[::-1]
    assert "nextCursor" not in every
    by_agent = json.loads(served.cli("runs", "list", "--agent", "cli.raises", "--json").stdout)
    assert all("cli.raises" in r["extensions"]["wopeval.run"]["agentIds"] for r in by_agent["runs"])
    later = json.loads(served.cli("runs", "list", "--tag", tag, "--since", "2999-01-01",
                                  "--json").stdout)  # fmt: skip
    assert later["runs"] == []
    assert served.cli("runs", "list", "--since", "last tuesday").code == 4

    shown = served.cli("runs", "show", run_ids[0])
    assert shown.code == 0, shown.stderr
    assert 'Inputs           {"lookup": "k0"}' in shown.stdout
    assert 'Outputs          {"agent": {"decision": "k0-value"}}' in shown.stdout
