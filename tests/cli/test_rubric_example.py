"""`examples/rubric-judge` runs as its README says: judged live by the scripted model server,
then replayed against its baseline with no judge call; its example labels calibrate the
judge, which stays advisory short of the floor (docs/graders.md)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from _backends import Backend
from _model_server import ModelScript, ModelServer
from _processes import child_env

from ._support import run_cli

EXAMPLE = Path(__file__).parents[2] / "examples" / "rubric-judge"
BASE_URL = "http://127.0.0.1:8792/v1"
ADVISORY = "advisory: judge support.judge is not calibrated (kappa n/a, n 0)"


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
        # `late-parcel` forgets to apologise, judged by two calls; the judge was never
        # calibrated, so its failure is advisory: shown, and the run passes (exit 0).
        assert first.code == 0, first.stdout + first.stderr
        said = " ".join(first.stdout.split())
        assert "(1/2 tasks passed)" in said, first.stdout
        assert f"Advisory {ADVISORY} (tasks refund-window, late-parcel)" in said
        assert len(script.received) == 2

        again = run_cli("eval", "support-replies", "--label", "v1", "--baseline", "latest:main",
                        "--modes", "rubric,regression", *store, env=env)  # fmt: skip
        assert again.code == 0, again.stdout + again.stderr
        assert "unchanged" in again.stdout, again.stdout
        assert len(script.received) == 2, "a repeated eval asked the judge again"

        # Named as the judge source, with no baseline: still no judge call.
        named = run_cli("eval", "support-replies", "--label", "v1",
                        "--judge-source", run_id(first.stderr), *store, env=env)  # fmt: skip
        assert named.code == 0, named.stdout + named.stderr
        assert len(script.received) == 2, "a named judge source did not answer"

        explained = run_cli("explain", run_id(named.stderr), *store, env=env)
        assert explained.code == 0, explained.stdout + explained.stderr
        shown = " ".join(explained.stdout.split())
        assert "judge support.judge (sha256:" in shown, shown
        assert (
            "FAIL 0.00 (weight 0.5) apologises for the delay — No apology for the delay." in shown
        )
        assert "exchange #0 replay" in shown

        # The example labels, then the judge's calibration against them.
        path = os.pathsep.join((str(Path(sys.executable).parent), os.environ["PATH"]))
        labelled = subprocess.run(
            ["sh", str(project / "label.sh"), run_id(first.stderr), *store],
            capture_output=True, text=True, timeout=120, check=False,
            env=child_env({**env, "PATH": path}),
        )  # fmt: skip
        assert labelled.returncode == 0, labelled.stdout + labelled.stderr
        report = " ".join(labelled.stdout.split())
        assert "labels 2 accuracy 1.00 kappa 1.00" in report, report
        assert "floor: kappa >= 0.6 over >= 30 labels: does not clear" in report, report
