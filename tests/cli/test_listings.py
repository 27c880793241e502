"""`wopeval suites ...` and `wopeval runs ...`: text and `--json`, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

from ._support import PROJECT, ServedHost, run_cli

VALID = PROJECT / "suites" / "basic.json"


def _invalid_suite(tmp_path: Path) -> Path:
    document = json.loads(VALID.read_text())
    document["tasks"][2]["fixtures"] = {
        "toolResponses": [{"tool": "cli:lookup", "argsMatch": "fuzzy", "response": {}}]
    }
    document["version"] = "1.0"
    path = tmp_path / "invalid.json"
    path.write_text(json.dumps(document))
    return path


def test_suites_validate_names_each_problem_by_pointer(tmp_path: Path) -> None:
    assert run_cli("suites", "validate", str(VALID)).code == 0
    invalid = _invalid_suite(tmp_path)
    result = run_cli("suites", "validate", str(VALID), str(invalid))
    assert result.code == 1, result.stdout + result.stderr
    assert "tasks[2].fixtures.toolResponses[0].argsMatch:" in result.stdout
    assert "version:" in result.stdout

    as_json = run_cli("suites", "validate", "--json", str(VALID), str(invalid))
    assert as_json.code == 1
    checks = json.loads(as_json.stdout)
    assert [c["valid"] for c in checks] == [True, False]
    assert checks[0]["suiteId"] == "cli.test.evals.basic"
    assert any(
        e.startswith("tasks[2].fixtures.toolResponses[0].argsMatch") for e in checks[1]["errors"]
    )

    missing = run_cli("suites", "validate", str(tmp_path / "absent.json"))
    assert missing.code == 4
    assert "cannot read" in missing.stderr


def test_suites_push_list_show(served: ServedHost, tmp_path: Path) -> None:
    document = json.loads(VALID.read_text())
    document["version"] = "2.0.0"
    path = tmp_path / "basic-2.json"
    path.write_text(json.dumps(document))
    first = served.cli("suites", "push", str(path))
    assert first.code == 0, first.stderr
    assert "created   cli.test.evals.basic@2.0.0" in first.stdout
    again = served.cli("suites", "push", "--json", str(path))
    assert again.code == 0
    assert json.loads(again.stdout)[0]["created"] is False

    document["tasks"] = document["tasks"][:1]
    path.write_text(json.dumps(document))
    conflict = served.cli("suites", "push", str(path))
    assert conflict.code == 4
    assert "wopeval.suite_version_exists" in conflict.stderr

    listed = json.loads(served.cli("suites", "list", "--json").stdout)["suites"]
    assert {"suiteId": "cli.test.evals.basic", "version": "2.0.0", "scope": "tenant",
            "taskCount": 3} in listed  # fmt: skip
    shown = served.cli("suites", "show", "cli.test.evals.basic@2.0.0")
    assert json.loads(shown.stdout)["version"] == "2.0.0"


def test_runs_list_show_events(served: ServedHost, tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    evaluated = served.cli("eval", "cli.test.evals.basic@1.0.0", "--agent", "cli.good",
                           "--json", str(out))  # fmt: skip
    assert evaluated.code == 0, evaluated.stderr
    run_id = json.loads(out.read_text())["runId"]

    listed = served.cli("runs", "list", "--json", "--limit", "200")
    assert run_id in [r["runId"] for r in json.loads(listed.stdout)["runs"]]
    table = served.cli("runs", "list", "--workflow", "cli.test.evals.basic")
    assert run_id in table.stdout

    shown = json.loads(served.cli("runs", "show", run_id, "--json").stdout)
    assert shown["run"]["status"] == "completed"
    assert shown["evalSummary"]["taskCount"] == 3
    assert "alpha" in served.cli("runs", "show", run_id).stdout

    events = json.loads(served.cli("runs", "events", run_id, "--json", "--type", "eval.").stdout)
    assert [e["type"] for e in events["events"]] == [
        "eval.started", "eval.scored", "eval.scored", "eval.scored", "eval.completed",
    ]  # fmt: skip

    missing = served.cli("runs", "show", "clitest/00000000000000000000000000000000")
    assert missing.code == 4
    assert "not_found" in missing.stderr
