"""`wopeval eval NAME`: an `[[evals]]` entry with the command line laid over it, the
revision recorded, recordings moved to the caller's tenant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer

from _processes import git
from wopeval import client
from wopeval.cli._eval_choice import EvalFlags, choose_eval
from wopeval.cli._exit import CliError
from wopeval.cli._revision import project_revision

SUITE = {
    "suiteId": "unit.cli.evals.choice",
    "version": "2.1.0",
    "modes": ["golden", "regression"],
    "tasks": [{"taskId": "t", "input": None,
               "expected": {"kind": "golden", "match": {"strategy": "exact", "value": 1}}}],
}  # fmt: skip
ENTRY = """
[[evals]]
name = "nightly"
suite = "recorded/suite.json"
agent = "support.desk"
fixture_runs = "recorded/map.json"
baseline = "latest:main"
modes = ["golden", "regression"]
trials = 3
offline = true
tags = ["nightly"]
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "wopeval.toml").write_text(ENTRY)
    (tmp_path / "recorded").mkdir()
    (tmp_path / "recorded" / "suite.json").write_text(json.dumps(SUITE))
    (tmp_path / "recorded" / "map.json").write_text(json.dumps({"t": "prod/" + "a" * 32}))
    return tmp_path


def test_an_entry_names_everything_and_its_files_are_read_from_the_project(project: Path) -> None:
    choice = choose_eval("nightly", EvalFlags(), project)
    assert choice.entry == "nightly"
    assert choice.suite_ref == "unit.cli.evals.choice@2.1.0"
    assert choice.suite_document == SUITE
    assert choice.agent == "support.desk"
    assert choice.fixture_runs == {"t": "prod/" + "a" * 32}
    assert choice.baseline == "latest:main"
    assert choice.modes == ("golden", "regression")
    assert (choice.trials, choice.offline, choice.tags) == (3, True, ("nightly",))


def test_flags_override_the_entry(project: Path, tmp_path: Path) -> None:
    other_map = tmp_path / "other.json"
    other_map.write_text(json.dumps({"t": "dev/" + "b" * 32, "u": "dev/" + "c" * 32}))
    flags = EvalFlags(
        agent="support.desk-v2",
        baseline="dev/" + "d" * 32,
        offline=False,
        fixture_runs_file=other_map,
        from_runs={"u": "dev/" + "e" * 32},
        tags=("pr", "nightly"),
        label="pr-17",
    )
    choice = choose_eval("nightly", flags, project)
    assert choice.agent == "support.desk-v2"
    assert choice.baseline == "dev/" + "d" * 32
    assert choice.offline is False
    assert choice.fixture_runs == {"t": "dev/" + "b" * 32, "u": "dev/" + "e" * 32}
    assert choice.tags == ("nightly", "pr")
    assert choice.revision == "pr-17"


def test_a_suite_on_the_command_line_needs_an_agent(project: Path) -> None:
    with pytest.raises(typer.BadParameter, match="not an \\[\\[evals\\]\\] entry"):
        choose_eval("some.suite@1.0.0", EvalFlags(), project)
    choice = choose_eval("some.suite@1.0.0", EvalFlags(agent="a"), project)
    assert (choice.suite_ref, choice.suite_document, choice.entry) == (
        "some.suite@1.0.0",
        None,
        None,
    )


def test_a_suite_file_that_is_not_a_suite_is_refused_before_any_host(project: Path) -> None:
    (project / "recorded" / "suite.json").write_text(json.dumps({**SUITE, "tasks": []}))
    with pytest.raises(CliError, match="is not a valid suite"):
        choose_eval("nightly", EvalFlags(), project)
    (project / "recorded" / "suite.json").unlink()
    with pytest.raises(CliError, match=r"suite\.json: \[Errno 2\]"):
        choose_eval("nightly", EvalFlags(), project)


def test_a_broken_map_is_refused(project: Path) -> None:
    (project / "recorded" / "map.json").write_text('["not", "a", "map"]')
    with pytest.raises(client.ClientError, match="is not a \\{taskId: runId\\} map"):
        choose_eval("nightly", EvalFlags(), project)


def test_recordings_move_to_the_callers_tenant_keeping_their_hex() -> None:
    runs = {"t": "prod/" + "a" * 32, "u": "b" * 32}
    assert client.under_tenant(runs, "ci") == {"t": "ci/" + "a" * 32, "u": "ci/" + "b" * 32}


def test_the_revision_is_the_label_else_the_commit_marked_dirty_by_tracked_changes(
    tmp_path: Path,
) -> None:
    assert project_revision(tmp_path, None) is None
    assert project_revision(tmp_path, "v1") == "v1"
    project = tmp_path / "agent"
    project.mkdir()
    (project / "agent.py").write_text("LIMIT = 100\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "agent")
    commit = git(tmp_path, "rev-parse", "HEAD")
    assert project_revision(project, None) == commit
    (project / "scratch.txt").write_text("untracked files do not make it dirty")
    assert project_revision(project, None) == commit
    (project / "agent.py").write_text("LIMIT = 30\n")
    assert project_revision(project, None) == commit + "-dirty"
    assert project_revision(project, "pr-17") == "pr-17"
