"""`wopeval annotate RUN [TASK] --label pass|fail --note …` and `--list`, embedded and remote."""

from __future__ import annotations

import json
from pathlib import Path

from _backends import Backend

from ._support import PROJECT, ServedHost, run_cli

BASIC = "cli.test.evals.basic@1.0.0"


def test_a_task_is_labelled_and_listed_on_the_embedded_host(
    backend: Backend, tmp_path: Path
) -> None:
    embedded = ["--data-dir", str(tmp_path / "data"), "--project", str(PROJECT)]
    if (url := backend.new_database()) is not None:
        embedded += ["--database-url", url]
    summary = tmp_path / "eval.json"
    done = run_cli("eval", BASIC, "--agent", "cli.good", "--json", str(summary), *embedded)
    assert done.code in (0, 1), done.stdout + done.stderr
    run_id = str(done.json_file(summary)["runId"])

    labelled = run_cli("annotate", run_id, "alpha", "--label", "fail", "--note", "wrong total",
                       *embedded)  # fmt: skip
    assert labelled.code == 0, labelled.stderr
    assert labelled.stdout.strip() == f"labelled task alpha of {run_id} fail"

    listed = run_cli("annotate", run_id, "--list", "--json", *embedded)
    assert listed.code == 0, listed.stderr
    (only,) = json.loads(listed.stdout)["annotations"]
    assert only["target"] == {"runId": run_id, "nodeId": "alpha"}
    assert only["signal"] == {"kind": "label", "label": "fail"}
    assert only["note"] == "wrong total"

    unknown = run_cli("annotate", run_id, "omega", "--label", "pass", *embedded)
    assert unknown.code == 4
    assert "names no task of this eval run" in unknown.stderr
    assert "validation_error" in unknown.stderr
    neither = run_cli("annotate", run_id, *embedded)
    assert neither.code == 4
    assert "--label" in neither.stderr
    after = json.loads(run_cli("annotate", run_id, "--list", "--json", *embedded).stdout)
    assert len(after["annotations"]) == 1


def test_a_run_is_labelled_on_a_remote_host_and_listed_as_a_table(served: ServedHost) -> None:
    done = served.cli("run", "cli-lookup", "--input", '{"answer": "a"}')
    assert done.code == 0, done.stderr
    run_id = done.stdout.split()[0]
    labelled = served.cli("annotate", run_id, "--label", "pass")
    assert labelled.code == 0, labelled.stderr
    assert labelled.stdout.strip() == f"labelled {run_id} pass"
    table = served.cli("annotate", run_id, "--list")
    assert table.code == 0, table.stderr
    assert "(run)" in table.stdout
    assert "pass" in table.stdout
    foreign = served.cli("annotate", "elsewhere/" + "0" * 32, "--list")
    assert foreign.code == 4
    assert "id_tenant_mismatch" in foreign.stderr
