"""An inconclusive task says how many more trials would decide it; `--trials auto` adds them.

The real `wopeval` in a subprocess on an embedded host, on SQLite and on
PostgreSQL. The candidate agent's outcomes are fixed by pattern
(`trials_project/wopeval_trials_project.py`), so against a baseline passing
10/10 everywhere:

- `steady` passes 10/10: unchanged;
- `drop` passes 5/10, Holm over 3 tasks → p ≈ 0.098, inconclusive; 2 more trials at
  5 of 10 (6/12) make 3 · Fisher p ≤ 0.05, so it is decided: regressed;
- `wobble` passes 9/10: no number of candidate trials alone decides it against
  a baseline of 10 (56 more on each side would).
"""

from __future__ import annotations

import json
import re
import secrets
from pathlib import Path
from typing import Any

import httpx
import pytest
from openwop_client.wire_id import project_id
from typer.testing import CliRunner

from _backends import Backend
from _processes import ServeOptions, ServeProcess
from wopeval.cli.main import app

from ._junit import outcomes
from ._support import Result, run_cli

PROJECT = Path(__file__).parent / "trials_project"
SUITE = "cli.test.evals.trials@1.0.0"
DROP_NOTE = "2 more trials at the observed pass rates would decide it"
WOBBLE_NOTE = (
    "more trials of this run alone would not decide it (up to 200); "
    "56 more on each side, the baseline too, would"
)


def _host(backend: Backend, tmp_path: Path) -> list[str]:
    host = ["--data-dir", str(tmp_path / "data"), "--project", str(PROJECT)]
    database = backend.new_database()
    return host + (["--database-url", database] if database else [])


def _baseline(host: list[str], tmp_path: Path) -> str:
    out = tmp_path / "base.json"
    result = run_cli("eval", SUITE, "--agent", "trials.good", "--json", str(out), *host)
    assert result.code == 0, result.stdout + result.stderr
    return str(json.loads(out.read_text())["runId"])


def _candidate(
    tmp_path: Path, host: list[str], baseline: str, *args: str
) -> tuple[Result, dict[str, Any]]:
    """`trials.seeded` against `baseline` with `args`: the result and its `--json` document."""
    out = tmp_path / "candidate.json"
    result = run_cli(
        "eval", SUITE, "--agent", "trials.seeded", "--baseline", baseline,
        "--json", str(out), *args, *host,
    )  # fmt: skip
    document = json.loads(out.read_text()) if out.exists() else {}
    return result, document


def _tasks(document: dict[str, Any]) -> dict[str, tuple[int, int, str]]:
    """Task id → (passed trials, trials, verdict) from a `--json` document."""
    summary = document["summary"]
    verdicts = {t["taskId"]: t["verdict"] for t in summary["regression"]["tasks"]}
    return {
        t["taskId"]: (t["passedTrials"], t["trials"], verdicts[t["taskId"]])
        for t in summary["tasks"]
    }


def test_an_inconclusive_task_says_how_many_more_trials_would_decide_it(
    backend: Backend, tmp_path: Path
) -> None:
    host = _host(backend, tmp_path)
    baseline = _baseline(host, tmp_path)
    junit, markdown, html = tmp_path / "c.xml", tmp_path / "c.md", tmp_path / "c.html"
    result, document = _candidate(
        tmp_path, host, baseline, "--junit", str(junit), "--markdown", str(markdown),
        "--html", str(html),
    )  # fmt: skip
    assert result.code == 0, result.stdout + result.stderr
    assert _tasks(document) == {
        "steady": (10, 10, "unchanged"),
        "drop": (5, 10, "inconclusive"),
        "wobble": (9, 10, "inconclusive"),
    }
    # The wire summary stays within its shape: no count in it.
    assert "moreTrials" not in json.dumps(document["summary"])
    # Where the verdict's reason is shown: the reason lines, JUnit, Markdown, explain.
    assert DROP_NOTE in result.stdout
    found = outcomes(junit)
    assert found["drop"][0] == "skipped"
    assert found["drop"][1].endswith(f"; {DROP_NOTE}")
    assert found["wobble"][1].endswith(f"; {WOBBLE_NOTE}")
    assert found["steady"][0] == "passed"
    assert f"— {DROP_NOTE}" in markdown.read_text()
    assert f" · {DROP_NOTE}</td>" in html.read_text()
    explained = run_cli("explain", document["runId"], "--json", *host)
    assert explained.code == 0, explained.stdout + explained.stderr
    lines = {line["taskId"]: line for line in json.loads(explained.stdout)["tasks"]}
    assert lines["drop"]["moreTrials"] == {"trials": 2, "eachSide": 2, "note": DROP_NOTE}
    assert lines["wobble"]["moreTrials"] == {"eachSide": 56, "note": WOBBLE_NOTE}
    assert "moreTrials" not in lines["steady"]
    one = run_cli("explain", document["runId"], "drop", *host)
    assert f"inconclusive: {DROP_NOTE}" in one.stdout


def test_trials_auto_adds_trials_to_exactly_the_decidable_inconclusive_tasks(
    backend: Backend, tmp_path: Path
) -> None:
    host = _host(backend, tmp_path)
    baseline = _baseline(host, tmp_path)
    junit = tmp_path / "c.xml"
    result, document = _candidate(
        tmp_path, host, baseline, "--trials", "auto", "--junit", str(junit), "--tag", "pr"
    )
    # 6/12 against 10/10 is a proven drop: the run regressed (exit 2).
    assert result.code == 2, result.stdout + result.stderr
    assert _tasks(document) == {
        "steady": (10, 10, "unchanged"),
        "drop": (6, 12, "regressed"),
        "wobble": (9, 10, "inconclusive"),
    }
    assert document["summary"]["regression"]["verdict"] == "regressed"
    extra = re.findall(r"Extra trials: eval run (\S+) \((.*)\)", result.stderr)
    assert [added for _, added in extra] == ["drop +2"]
    assert "2 of 50 extra trials in 1 run(s); 1 task(s) still inconclusive" in result.stderr
    assert outcomes(junit)["drop"][0] == "failure"
    assert outcomes(junit)["wobble"][1].endswith(f"; {WOBBLE_NOTE}")
    # The extra trials are an eval run of their own, judged honestly over its own trials.
    runs = run_cli("runs", "show", extra[0][0], "--json", *host)
    assert runs.code == 0, runs.stdout + runs.stderr
    shown = json.loads(runs.stdout)
    # Untagged, so `--baseline latest:pr` never picks a part of the suite.
    assert not shown["run"].get("tags")
    own = shown["evalSummary"]
    assert [(t["taskId"], t["passedTrials"], t["trials"]) for t in own["tasks"]] == [("drop", 1, 2)]
    assert own["suiteVersion"].startswith("1.0.2")
    assert own["regression"]["baselineRunId"] == baseline


def test_trials_auto_keeps_within_its_budget(backend: Backend, tmp_path: Path) -> None:
    host = _host(backend, tmp_path)
    baseline = _baseline(host, tmp_path)
    result, document = _candidate(
        tmp_path, host, baseline, "--trials", "auto", "--trials-budget", "1"
    )
    assert result.code == 0, result.stdout + result.stderr
    # `drop` needs 2: a budget of 1 buys nothing that would decide it, so nothing runs.
    assert "Extra trials" not in result.stderr
    assert "0 of 1 extra trials in 0 run(s); 2 task(s) still inconclusive" in result.stderr
    assert _tasks(document)["drop"] == (5, 10, "inconclusive")


def test_the_compare_page_shows_the_count(backend: Backend, tmp_path: Path) -> None:
    data_dir = tmp_path / "served"
    key = "trials_" + secrets.token_urlsafe(24)
    options = ServeOptions(data_dir, backend.new_database(), (f"t={key}",), PROJECT)
    serve = ServeProcess(options, tmp_path / "serve.log")
    try:
        serve.wait_up()
        remote = ["--url", serve.url, "--api-key", key]
        baseline = _baseline(remote, tmp_path)
        result, document = _candidate(tmp_path, remote, baseline)
        assert result.code == 0, result.stdout + result.stderr
        with httpx.Client(base_url=serve.url, trust_env=False, timeout=60.0) as browser:
            signed = browser.post("/ui/sign-in", data={"key": key, "next": "/ui/runs"})
            assert signed.status_code == 303, signed.text
            page = browser.get(
                "/ui/compare",
                params={
                    "baseline": project_id(baseline),
                    "candidate": project_id(document["runId"]),
                },
            )
    finally:
        serve.stop()
    assert page.status_code == 200, page.text
    rows = re.findall(r'<tr data-task-id="([a-z]+)".*?</tr>', page.text, re.S)
    assert rows == ["drop", "wobble", "steady"]
    drop = re.search(r'<tr data-task-id="drop".*?</tr>', page.text, re.S)
    assert drop is not None
    assert f'<div class="more-trials muted">{DROP_NOTE}</div>' in drop.group()
    assert "more-trials" not in page.text.split('data-task-id="steady"')[1].split("</tr>")[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--trials", "sometimes"], "must be 1-100 or auto", id="trials-word"),
        pytest.param(["--trials", "101"], "must be 1-100 or auto", id="trials-range"),
        pytest.param(["--trials-budget", "5"], "only with --trials auto", id="budget-alone"),
        pytest.param(
            ["--trials", "3", "--trials-budget", "5"], "only with --trials auto", id="budget-fixed"
        ),
        pytest.param(
            ["--trials", "auto", "--trials-budget", "-1"], "Invalid value for", id="negative-budget"
        ),
    ],
)
def test_trials_usage_errors_exit_4(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["eval", SUITE, "--agent", "a", *args])
    assert result.exit_code == 4, result.output
    assert message in result.output
