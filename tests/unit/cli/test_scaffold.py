"""Every project `wopeval init` can write, rendered in-process: each file parses as what it is.

The CLI tier runs a representative set end to end (tests/cli/test_init.py); here every
kind x framework x tool is rendered and read back: the manifest by the models the
host loads it with, the suite by the suite rules, the CI workflow as YAML, and the
Python files are compiled and pass the project's own lint and format rules (they
are the user's starting code).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from wopeval.cli._scaffold import FRAMEWORKS, KINDS, TOOLS, Choices, render
from wopeval.engine.catalog.project_file import ProjectFile
from wopeval.wire.suite import parse_suite

ALL = [
    Choices(kind, tool, framework)
    for kind in KINDS
    for framework in (FRAMEWORKS if kind == "llm" else [None])
    for tool in TOOLS
]


@pytest.mark.parametrize("choices", ALL, ids=lambda c: f"{c.kind}-{c.framework}-{c.tool}")
def test_each_file_parses_as_what_it_is(choices: Choices) -> None:
    files = render(choices)
    manifest = ProjectFile.model_validate(tomllib.loads(files["wopeval.toml"]))
    (agent,) = manifest.agents
    assert agent.id == "my-agent"
    assert [entry.name for entry in manifest.evals] == ["prod"]
    assert (agent.model_replay == "recorded") == (choices.kind == "llm")
    suite = parse_suite(json.loads(files["suites/smoke.json"]))
    assert suite.targetAgentId == "my-agent"
    assert json.loads(files["workflows/my-agent.json"])["id"] == "my-agent"
    workflow = yaml.safe_load(files[".github/workflows/wopeval.yml"])
    steps = [step.get("name") for step in workflow["jobs"]["eval"]["steps"]]
    assert "wopeval eval prod --offline" in json.dumps(workflow)
    # The replay runs the agent: a service agent must be up for it, nothing else.
    assert ("Start the agent service" in steps) == (choices.kind == "http")
    for path, text in files.items():
        if path.endswith(".py"):
            compile(text, path, "exec")


def test_the_python_it_writes_is_lint_and_format_clean(tmp_path: Path) -> None:
    for choices in ALL:
        where = tmp_path / f"{choices.kind}-{choices.framework}-{choices.tool}"
        for path, text in render(choices).items():
            if path.endswith(".py"):
                (where / path).parent.mkdir(parents=True, exist_ok=True)
                (where / path).write_text(text)
    ruff = [sys.executable, "-m", "ruff", "--config", "line-length = 100"]
    for check in (["check", "--select", "E,F,W,B,UP,SIM"], ["format", "--check"]):
        done = subprocess.run([*ruff, *check, str(tmp_path)], capture_output=True, text=True,
                              check=False)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
