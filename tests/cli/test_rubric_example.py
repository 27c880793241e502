"""`examples/rubric-judge` runs as its README says: judged live by the scripted model server,
then replayed against its baseline with no judge call (docs/graders.md)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from _backends import Backend
from _model_server import ModelScript, ModelServer

from ._support import run_cli

EXAMPLE = Path(__file__).parents[2] / "examples" / "rubric-judge"
BASE_URL = "http://127.0.0.1:8792/v1"


def run_id(stderr: str) -> str:
    found = re.search(r"Eval run (\S+)", stderr)
    assert found is not None, stderr
    return found.group(1)


def test_the_rubric_example_is_judged_live_then_replayed_with_no_judge_call(
    backend: Backend, tmp_path: Path
) -> None:
    script = ModelScript()
    script.load(json.loads((EXAMPLE / "model-script.json").read_text(encoding="utf-8")))
    project = tmp_path / "rubric-judge"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("__pycache__"))
    manifest = project / "wopeval.toml"
    with ModelServer(script) as server:
        text = manifest.read_text(encoding="utf-8")
        assert text.count(BASE_URL) == 1
        manifest.write_text(text.replace(BASE_URL, server.base_url), encoding="utf-8")
        database = backend.new_database()
        store = ["--data-dir", str(tmp_path / "data"), "--project", str(project)]
        store += ["--database-url", database] if database else []
        env = {"OPENAI_API_KEY": "sk-example"}

        first = run_cli("eval", "support-replies", "--label", "v1", *store, env=env)
        # `late-parcel` forgets to apologise: the suite fails (exit 1), judged by two calls.
        assert first.code == 1, first.stdout + first.stderr
        assert "(1/2 tasks passed)" in " ".join(first.stdout.split()), first.stdout
        assert len(script.received) == 2

        again = run_cli("eval", "support-replies", "--label", "v1", "--baseline", "latest:main",
                        "--modes", "rubric,regression", *store, env=env)  # fmt: skip
        assert again.code == 1, again.stdout + again.stderr
        assert "unchanged" in again.stdout, again.stdout
        assert len(script.received) == 2, "a repeated eval asked the judge again"

        # Named as the judge source, with no baseline: still no judge call.
        named = run_cli("eval", "support-replies", "--label", "v1",
                        "--judge-source", run_id(first.stderr), *store, env=env)  # fmt: skip
        assert named.code == 1, named.stdout + named.stderr
        assert len(script.received) == 2, "a named judge source did not answer"

        explained = run_cli("explain", run_id(named.stderr), *store, env=env)
        assert explained.code == 0, explained.stdout + explained.stderr
        shown = " ".join(explained.stdout.split())
        assert "judge support.judge (sha256:" in shown, shown
        assert (
            "FAIL 0.00 (weight 0.5) apologises for the delay — No apology for the delay." in shown
        )
        assert "exchange #0 replay" in shown
