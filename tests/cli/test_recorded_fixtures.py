"""`--from-run`: a task replays a workflow run's recorded calls; nothing runs live.

Also the embedded default: with no `--url`, `wopeval eval` starts its own host
over `--data-dir` and `--project`, the same code path over loopback.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from wopeval.wire import ids

from ._support import PROJECT, ServedHost, run_cli

BASIC = "cli.test.evals.basic@1.0.0"


def _workflow_run(served: ServedHost, inputs: dict[str, str]) -> str:
    with served.http() as client:
        created = client.post("/runs", json={"workflowId": "cli-lookup", "inputs": inputs})
        assert created.status_code == 201, created.text
        run_id = str(created.json()["runId"])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            status = client.get(f"/runs/{ids.project(run_id)}").json()["status"]
            if status == "completed":
                return run_id
            assert status in ("pending", "running"), status
            time.sleep(0.05)
    raise AssertionError("the workflow run did not complete")


def test_from_run_replays_recorded_calls_with_no_live_call(
    served: ServedHost, tmp_path: Path
) -> None:
    source = _workflow_run(served, {"lookup": "g"})
    out = tmp_path / "replay.json"
    result = served.cli(
        "eval", BASIC, "--agent", "cli.good", "--from-run", f"gamma={source}", "--json", str(out)
    )
    assert result.code == 0, result.stdout + result.stderr
    document = result.json_file(out)
    assert document["liveCalls"] == 0
    assert document["summary"]["fixtureMissCount"] == 0
    assert "Live tool calls  0" in result.stdout


def test_a_call_the_source_never_made_fails_closed(served: ServedHost, tmp_path: Path) -> None:
    source = _workflow_run(served, {"lookup": "other"})
    out = tmp_path / "drift.json"
    result = served.cli(
        "eval", BASIC, "--agent", "cli.good", "--from-run", f"gamma={source}", "--json", str(out)
    )
    # gamma asks for key "g"; the source recorded key "other": a miss, never a live call.
    assert result.code == 1, result.stdout + result.stderr
    document = result.json_file(out)
    assert document["liveCalls"] == 0
    assert document["summary"]["fixtureMissCount"] == 1
    gamma = next(t for t in document["summary"]["tasks"] if t["taskId"] == "gamma")
    assert (gamma["passed"], gamma["fixtureMissCount"]) == (False, 1)


def test_embedded_host_by_default(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    out = tmp_path / "embedded.json"
    result = run_cli(
        "eval", BASIC, "--agent", "cli.good", "--data-dir", str(data_dir),
        "--project", str(PROJECT), "--json", str(out),
    )  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    # The command's own host presents an in-memory session key: it stores no key.
    assert not (data_dir / "dev-api-key").exists()
    run_id = result.json_file(out)["runId"]
    listed = run_cli("runs", "list", "--json", "--data-dir", str(data_dir))
    assert listed.code == 0, listed.stderr
    assert [r["runId"] for r in json.loads(listed.stdout)["runs"]] == [run_id]
