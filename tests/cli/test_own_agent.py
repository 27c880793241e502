"""docs/own-agent.md followed as a newcomer would: block by block, in one shell, nothing else.

The shell starts with only the venv on `PATH` (what the page's install block
leaves), a fresh home and no wopeval or provider variable; each block runs with
the variables and directory the blocks before it left. The provider block is the
one step not run as written: the variables it names, and only those, point at
the strict local model stand-in playing the script the page gives for a user
without a provider key, as a user points them at their provider. So a step that
needs a variable, a file or a service the page does not name fails here, and so
does a page script the scaffold's agent would not get through. The page's CI step
is the project's own workflow: its `run:` steps run as GitHub would, on a fresh
checkout of the project with the changed agent.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from _model_server import ModelScript, ModelServer

from ._doc_blocks import runnable_blocks

PAGE = Path(__file__).resolve().parents[2] / "docs" / "own-agent.md"
STEPS = ["init", "provider", "record", "suite", "baseline", "change", "verdict"]
STAND_IN_SCRIPT = "stand-in-script"
"""The page's JSON block: what the stand-in answers when a user has no provider key."""
ORDERS = ["A-1001", "A-1002"]
BLOCK_TIMEOUT_SECONDS = 300.0
REGRESSED = 2
BY_HAND = frozenset({"Install wopeval"})
"""Workflow steps only GitHub runs: this checkout's wopeval is on PATH already."""
# Seven blocks and a CI job, each allowed BLOCK_TIMEOUT_SECONDS: more than the default.
WHOLE_TEST_TIMEOUT = pytest.mark.timeout(900)


def provider_script(document: str) -> ModelScript:
    """The stand-in's conversations, as the page's script block writes them."""
    script = ModelScript()
    script.load(json.loads(document))
    return script


class Shell:
    """One user's shell, block after block: exported variables and the directory carry over."""

    def __init__(self, home: Path) -> None:
        home.mkdir()
        self.state = home / ".shell-state"
        self.where = home / ".shell-cwd"
        self.where.write_text(str(home))
        self.env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(home),
                    "LANG": "C.UTF-8"}  # fmt: skip
        if "PYTHONPATH" in os.environ:  # a worktree run ahead of the venv's own install
            self.env["PYTHONPATH"] = os.environ["PYTHONPATH"]

    def run(self, body: str) -> subprocess.CompletedProcess[str]:
        restore = f'[ -f "{self.state}" ] && . "{self.state}"\ncd "$(cat "{self.where}")"\n'
        keep = f'trap \'declare -px > "{self.state}"; pwd > "{self.where}"\' EXIT\n'
        return subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", restore + keep + body],
            env=self.env, capture_output=True, text=True, timeout=BLOCK_TIMEOUT_SECONDS,
            check=False,
        )  # fmt: skip

    @property
    def cwd(self) -> Path:
        return Path(self.where.read_text().strip())


def ci_steps(workflow: dict[str, Any]) -> list[tuple[str, str, dict[str, str]]]:
    (job,) = workflow["jobs"].values()
    return [(step["name"], step["run"], {**workflow.get("env", {}), **step.get("env", {})})
            for step in job["steps"] if "run" in step]  # fmt: skip


@WHOLE_TEST_TIMEOUT
def test_the_page_as_written_from_init_to_the_pull_requests_verdict(tmp_path: Path) -> None:
    blocks = runnable_blocks(PAGE)
    _, stand_in_script = blocks.pop(STAND_IN_SCRIPT)
    assert list(blocks) == STEPS
    shell = Shell(tmp_path / "home")
    with ModelServer(provider_script(stand_in_script)) as provider:

        def step(name: str, code: int = 0) -> str:
            done = shell.run(blocks[name][1])
            assert done.returncode == code, f"{name}: {done.stdout}{done.stderr}"
            return done.stdout

        step("init")
        named = re.findall(r"^export (\w+)=", blocks["provider"][1], re.M)
        assert sorted(named) == ["OPENAI_API_KEY", "OPENAI_BASE_URL"]
        given = {"OPENAI_API_KEY": "sk-local-stand-in", "OPENAI_BASE_URL": provider.base_url}
        assert shell.run("".join(f"export {n}={given[n]}\n" for n in named)).returncode == 0

        recorded = step("record")
        assert recorded.count(" completed decision=") == len(ORDERS)
        assert provider.stats.requests == 2 * len(ORDERS)  # a tool call, then the answer
        step("suite")
        baseline = step("baseline")
        assert "2/2 tasks passed" in baseline
        step("change")
        verdict = step("verdict", REGRESSED)
        assert verdict.startswith("### 🔴 REGRESSED")
        assert "model replay miss" in verdict
        assert provider.stats.requests == 2 * len(ORDERS)  # both evals replayed the model

        project = shell.cwd
        assert project.name == "my-agent"
        workflow = yaml.safe_load((project / ".github/workflows/wopeval.yml").read_text())
        checkout = tmp_path / "checkout"
        shutil.copytree(project, checkout, ignore=shutil.ignore_patterns(".wopeval*"))
        summary = tmp_path / "step-summary.md"
        outcomes = []
        for name, script, env in ci_steps(workflow):
            if name in BY_HAND:
                continue
            done = subprocess.run(
                ["bash", "-e", "-o", "pipefail", "-c", script], cwd=checkout,
                env={**shell.env, "GITHUB_STEP_SUMMARY": str(summary), **env},
                capture_output=True, text=True, timeout=BLOCK_TIMEOUT_SECONDS, check=False,
            )  # fmt: skip
            outcomes.append((name, done.returncode, done.stdout + done.stderr))
        assert [(name, code) for name, code, _ in outcomes] == [
            ("Replay the recordings against this pull request", REGRESSED)
        ], outcomes
        assert summary.read_text().startswith("### 🔴 REGRESSED")
        assert provider.stats.requests == 2 * len(ORDERS)  # CI needs no provider either
