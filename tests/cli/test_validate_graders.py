"""`wopeval suites validate --project DIR`: a custom match must name a declared grader."""

from __future__ import annotations

import json
from pathlib import Path

from ._support import run_cli


def _suite(path: Path, grader: str) -> Path:
    match = {"strategy": "custom", "grader": grader, "value": "gold"}
    document = {
        "suiteId": "cli.test.evals.graders",
        "version": "1.0.0",
        "modes": ["golden"],
        "tasks": [
            {"taskId": "plain", "input": None, "expected": {"kind": "golden", "match": {
                "strategy": "exact", "value": "done"}}},
            {"taskId": "graded", "input": None, "expected": {"kind": "golden", "match": match}},
        ],
    }  # fmt: skip
    path.write_text(json.dumps(document))
    return path


def test_validate_checks_graders_only_against_the_given_project(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    # Only the ids are read: the callable's module need not exist for `validate`.
    (project / "wopeval.toml").write_text(
        '[[graders]]\nid = "refund-check"\ncallable = "not_imported:check"\n'
    )
    known = _suite(tmp_path / "known.json", "refund-check")
    unknown = _suite(tmp_path / "unknown.json", "tier-check")

    assert run_cli("suites", "validate", str(unknown)).code == 0
    result = run_cli("suites", "validate", "--project", str(project), str(known), str(unknown))
    assert result.code == 1, result.stdout + result.stderr
    assert "valid   " in result.stdout
    assert "tasks[1].expected.match.grader: this host declares no grader 'tier-check'" in (
        result.stdout
    )

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "wopeval.toml").write_text('[[graders]]\nid = "Bad Id"\n')
    refused = run_cli("suites", "validate", "--project", str(broken), str(known))
    assert refused.code == 4
    assert "wopeval.toml" in refused.stderr
