"""The README's examples, run as written (a user's clone: `wopeval` on PATH from the venv).

Every fenced block of README.md is marked just above it: `<!-- readme: runs NAME -->`
(run here), `<!-- readme: synopsis -->` or `<!-- readme: illustrative -->`. The
blocks run in a scratch directory holding a copy of `examples/`, as a user would
run them from the repository root: the host blocks against `wopeval serve` with
its defaults, the record-and-replay blocks on their own embedded store, with the
agent changed between them as the README says.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from _processes import child_env

from ._doc_blocks import runnable_blocks

REPOSITORY = Path(__file__).resolve().parents[2]
README = REPOSITORY / "README.md"
DEFAULT_PORT = 8737
TIMEOUT_SECONDS = 300.0
REGRESSED = 2
# Several README blocks in a row, each allowed TIMEOUT_SECONDS: more than the default per-test
# time-out (pyproject.toml).
WHOLE_TEST_TIMEOUT = pytest.mark.timeout(900)


def blocks() -> dict[str, tuple[str, str]]:
    """Each runnable block by name: (language, text)."""
    return runnable_blocks(README)


def environment() -> dict[str, str]:
    """The user's shell: the venv on PATH, no wopeval settings, no credentials."""
    env = child_env()
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env.pop("ORDERS_TOKEN", None)
    return env


def run(language: str, body: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = ["bash", "-e", "-o", "pipefail", "-c", body]
    if language == "python":
        command = [sys.executable, "-c", body]
    return subprocess.run(command, cwd=cwd, env=environment(), capture_output=True, text=True,
                          timeout=TIMEOUT_SECONDS, check=False)  # fmt: skip


def test_every_block_is_marked_and_the_runnable_ones_are_known() -> None:
    assert set(blocks()) == {"serve-curl", "client", "record", "judge"}


def test_wopeval_version_names_the_installed_package() -> None:
    from importlib.metadata import version

    done = run("sh", "wopeval --version", REPOSITORY)
    assert (done.returncode, done.stdout) == (0, f"wopeval {version('wopeval')}\n")


@WHOLE_TEST_TIMEOUT
def test_the_host_examples_run_against_a_default_serve(tmp_path: Path) -> None:
    examples = blocks()
    serve = subprocess.Popen(
        [str(Path(sys.executable).with_name("wopeval")), "serve"],
        cwd=tmp_path, env=environment(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{DEFAULT_PORT}/.well-known/openwop").is_success:
                    break
            except httpx.TransportError:
                pass
            assert serve.poll() is None, "wopeval serve exited"
            assert time.monotonic() < deadline, "wopeval serve did not come up"
            time.sleep(0.1)
        curl = run(*examples["serve-curl"], tmp_path)
        assert curl.returncode == 0, curl.stderr
        assert '"runList"' in curl.stdout  # the discovery document
        assert '"runId"' in curl.stdout
        client = run(*examples["client"], tmp_path)
        assert client.returncode == 0, client.stderr
        assert client.stdout.splitlines()[0] == "0 run.started"
        assert client.stdout.splitlines()[-1].endswith(" run.completed")
    finally:
        serve.terminate()
        serve.wait(timeout=30)


@WHOLE_TEST_TIMEOUT
def test_record_change_the_agent_and_judge_it(tmp_path: Path) -> None:
    examples = blocks()
    scratch = shutil.ignore_patterns("recorded", "orders-calls.log", "__pycache__")
    shutil.copytree(REPOSITORY / "examples", tmp_path / "examples", ignore=scratch)
    recorded = run(*examples["record"], tmp_path)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert recorded.stdout.count(" completed decision=") == 3  # `wopeval run`, not the listing
    assert "prod" in recorded.stdout
    calls = tmp_path / "examples" / "mcp-tools" / "orders-calls.log"
    live = calls.read_text().count("\n")

    agent = tmp_path / "examples" / "mcp-tools" / "refund_agent.py"
    source = agent.read_text()
    assert "AUTO_REFUND_LIMIT = 100.0" in source
    agent.write_text(source.replace("AUTO_REFUND_LIMIT = 100.0", "AUTO_REFUND_LIMIT = 30.0"))
    # One shell for the whole walkthrough: the judge block runs with the record block's
    # `export WOPEVAL_...` (its credential was unset before it ended).
    language, judge = examples["judge"]
    exports = [line for line in examples["record"][1].splitlines()
               if line.startswith("export WOPEVAL_")]  # fmt: skip
    judged = run(language, "\n".join([*exports, judge]), tmp_path)
    assert judged.returncode == REGRESSED, judged.stdout + judged.stderr
    assert judged.stdout.startswith("### 🔴 REGRESSED")
    assert "over the auto-refund limit" in judged.stdout
    assert "Baseline latest:main: dev/" in judged.stderr
    assert (tmp_path / "reports" / "eval.html").exists()
    assert calls.read_text().count("\n") == live  # the replays called the server not once

    # "`wopeval explain RUN_ID` then shows each failing task's diff": in the same shell, whose
    # project's MCP server needs the credential the record block unset. Reading runs starts
    # no tool, so it must not need the tool's secret.
    (candidate,) = re.findall(r"\*\*Run:\*\* `(dev/[0-9a-f]+)`", judged.stdout)
    explained = run(language, "\n".join([*exports, f"wopeval explain {candidate}"]), tmp_path)
    assert explained.returncode == 0, explained.stdout + explained.stderr
    assert "FAILED" in explained.stdout
    assert "over the auto-refund limit" in explained.stdout
    assert calls.read_text().count("\n") == live
