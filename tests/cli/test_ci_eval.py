"""`wopeval eval` for CI: `--offline`, the live-tool warning, `--baseline latest:TAG`,
`[[evals]]` entries with a suite file, the revision in the reports, `--markdown -`."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

from ._support import PROJECT, ServedHost, run_cli

BASIC = "cli.test.evals.basic@1.0.0"
NOT_STARTED = 4


def _record(served: ServedHost, inputs: dict[str, str]) -> str:
    done = served.cli("run", "cli-lookup", "--input", json.dumps(inputs))
    assert done.code == 0, done.stderr
    return done.stdout.split()[0]


def _eval_runs(served: ServedHost) -> list[str]:
    listed = served.cli("runs", "list", "--all", "--json")
    assert listed.code == 0, listed.stderr
    return [run["runId"] for run in json.loads(listed.stdout)["runs"]
            if run["extensions"]["wopeval.run"]["kind"] == "eval"]  # fmt: skip


def test_offline_refuses_before_any_run_naming_the_tasks_that_could_go_live(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    embedded = ["--data-dir", str(data_dir), "--project", str(PROJECT)]
    source = run_cli("run", "cli-lookup", "--input", '{"lookup": "g"}', *embedded)
    assert source.code == 0, source.stderr
    refused = run_cli("eval", BASIC, "--agent", "cli.good", "--offline",
                      "--from-run", f"gamma={source.stdout.split()[0]}", *embedded)  # fmt: skip
    assert refused.code == NOT_STARTED, refused.stdout + refused.stderr
    assert "2 of 3 tasks could reach a live tool (alpha, beta)" in refused.stderr
    assert "No run was started" in refused.stderr
    listed = run_cli("runs", "list", "--json", *embedded)
    assert [run["workflowId"] for run in json.loads(listed.stdout)["runs"]] == ["cli-lookup"]


def test_offline_needs_the_embedded_host(served: ServedHost) -> None:
    refused = served.cli("eval", BASIC, "--agent", "cli.good", "--offline")
    assert refused.code == NOT_STARTED
    assert "--offline" in refused.stderr


def test_without_offline_the_cli_warns_which_tasks_will_call_live_tools(
    served: ServedHost,
) -> None:
    source = _record(served, {"lookup": "g"})
    done = served.cli("eval", BASIC, "--agent", "cli.good", "--from-run", f"gamma={source}")
    assert done.code == 0, done.stderr
    assert "warning: 2 of 3 tasks will call live tools" in done.stderr
    assert "alpha, beta" in done.stderr
    quiet = served.cli("eval", "cli.test.evals.coin@1.0.0", "--agent", "cli.good",
                       "--from-run", f"coin={_record(served, {'answer': 'heads'})}")  # fmt: skip
    assert quiet.code == 0, quiet.stderr
    assert "warning" not in quiet.stderr


def test_latest_tag_picks_the_newest_completed_baseline_and_refuses_when_none(
    served: ServedHost, tmp_path: Path
) -> None:
    tag = f"main-{uuid.uuid4().hex[:8]}"
    none = served.cli("eval", BASIC, "--agent", "cli.bad", "--baseline", f"latest:{tag}")
    assert none.code == NOT_STARTED
    assert f"no completed eval run of cli.test.evals.basic by cli.bad carries the tag {tag!r}" in (
        none.stderr
    )
    before = _eval_runs(served)
    assert served.cli("eval", BASIC, "--agent", "cli.bad", "--tag", tag).code == 1
    assert served.cli("eval", BASIC, "--agent", "cli.good", "--tag", tag).code == 0
    newest = next(run for run in _eval_runs(served) if run not in before)
    other_agent = served.cli("eval", BASIC, "--agent", "cli.flaky", "--baseline", f"latest:{tag}")
    assert other_agent.code == NOT_STARTED  # same suite and tag, another agent: not its baseline

    out = tmp_path / "judged.json"
    judged = served.cli("eval", BASIC, "--agent", "cli.good", "--baseline", f"latest:{tag}",
                        "--json", str(out))  # fmt: skip
    assert judged.code == 0, judged.stderr
    assert f"Baseline latest:{tag}: {newest}, completed " in judged.stderr
    assert out.exists()
    assert json.loads(out.read_text())["summary"]["regression"]["baselineRunId"] == newest


def test_an_entry_runs_by_name_offline_and_its_revision_reaches_every_report(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("__pycache__"))
    data_dir = tmp_path / "data"
    embedded = ["--data-dir", str(data_dir), "--project", str(project)]
    sources = {}
    for task, inputs in {"alpha": {"answer": "a"}, "beta": {"answer": "b", "fragile": True},
                         "gamma": {"lookup": "g"}}.items():  # fmt: skip
        done = run_cli("run", "cli-lookup", "--input", json.dumps(inputs), *embedded)
        assert done.code == 0, done.stderr
        sources[task] = done.stdout.split()[0]
    (project / "recorded").mkdir()
    suite = json.loads((PROJECT / "suites" / "basic.json").read_text())
    (project / "recorded" / "basic.json").write_text(json.dumps({**suite, "version": "7.0.0"}))
    (project / "recorded" / "basic.fixture-runs.json").write_text(json.dumps(sources))
    with (project / "wopeval.toml").open("a") as toml:
        toml.write(
            '\n[[evals]]\nname = "pr"\nsuite = "recorded/basic.json"\nagent = "cli.good"\n'
            'fixture_runs = "recorded/basic.fixture-runs.json"\noffline = true\n'
            'tags = ["pr"]\n'
        )

    junit, summary = tmp_path / "junit.xml", tmp_path / "summary.json"
    done = run_cli("eval", "pr", "--label", "pr-17", "--markdown", "-",
                   "--junit", str(junit), "--json", str(summary), *embedded)  # fmt: skip
    assert done.code == 0, done.stdout + done.stderr
    markdown = done.stdout
    assert markdown.startswith("### ✅ PASSED — `cli.test.evals.basic@7.0.0`")
    assert "- **Agent:** `cli.good` at `pr-17`" in markdown
    assert "- **Live tool calls:** 0" in markdown
    assert "Live tool calls" in done.stderr  # the table went to stderr
    assert '<property name="revision" value="pr-17"' in junit.read_text()

    # `latest:pr` is a baseline of the same agent: for cli.bad there is none.
    unpaired = run_cli("eval", "pr", "--agent", "cli.bad", "--baseline", "latest:pr", *embedded)
    assert unpaired.code == NOT_STARTED
    # The pull request changes cli.good's code (now the bad agent's): the same agent id
    # replays the same recordings and is judged against the run above, picked by tag.
    manifest = project / "wopeval.toml"
    good = 'id = "cli.good"\nlane = "python"\ncallable = "wopeval_cli_project:good"'
    assert good in manifest.read_text()
    manifest.write_text(manifest.read_text().replace(good, good.replace(":good", ":bad")))
    worse = run_cli("eval", "pr", "--baseline", "latest:pr", "--markdown", "-", *embedded)
    assert worse.code == 2, worse.stdout + worse.stderr
    baseline = json.loads(summary.read_text())["runId"]
    assert f"Baseline latest:pr: {baseline}, completed " in worse.stderr
    assert worse.stdout.startswith("### 🔴 REGRESSED")
    assert "| `beta` |" in worse.stdout.split("| `alpha` |")[0]  # the regressed task leads
    assert "tagged `pr`" in worse.stdout
