"""Script files: every example's script loads (a misspelt turn is refused, never played
as an empty answer), and `python tests/_model_server --script FILE` serves one."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from _model_server import ModelScript
from _processes import child_env, free_port

from .conftest import OPENAI_HEADERS

ROOT = Path(__file__).parents[2]
EXAMPLE_SCRIPTS = sorted((ROOT / "examples").glob("**/model-script*.json"))
START_DEADLINE_SECONDS = 30.0


def test_there_are_example_scripts() -> None:
    assert EXAMPLE_SCRIPTS


@pytest.mark.parametrize(
    "path", EXAMPLE_SCRIPTS, ids=[str(p.relative_to(ROOT)) for p in EXAMPLE_SCRIPTS]
)
def test_an_example_script_loads(path: Path) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    script = ModelScript()
    script.load(document)
    assert len(script.conversations) == len(document["conversations"]) > 0


@pytest.mark.parametrize(
    "turn",
    [{"contents": "typo"}, {"tool_calls": [{"name": "add", "args": {}}]}],
    ids=["unknown-key", "tool-call-without-arguments"],
)
def test_a_misspelt_turn_is_refused_when_scripted(turn: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="turn 0"):
        ModelScript().add("q", [turn])


def test_the_server_runs_from_the_command_line_on_a_script(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"conversations": [{"user": "q", "turns": [{"content": "a"}]}]}))
    port = free_port()
    command = [sys.executable, str(ROOT / "tests" / "_model_server"), "--port", str(port),
               "--script", str(script)]  # fmt: skip
    log = tmp_path / "server.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            command, stdout=output, stderr=subprocess.STDOUT, env=child_env()
        )
    try:
        body = {"model": "m", "messages": [{"role": "user", "content": "q"}]}
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        deadline = time.monotonic() + START_DEADLINE_SECONDS
        while True:
            try:
                answer = httpx.post(url, json=body, headers=OPENAI_HEADERS, trust_env=False)
                break
            except httpx.ConnectError:
                assert process.poll() is None, log.read_text()
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
        assert answer.json()["choices"][0]["message"]["content"] == "a"
    finally:
        process.terminate()
        process.wait(START_DEADLINE_SECONDS)
