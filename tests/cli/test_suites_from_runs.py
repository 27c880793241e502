"""`wopeval suites from-runs`: recorded workflow runs become a suite and its fixture-runs map.

Runs are recorded with `wopeval run --tag …`; the suite made from them is
published and evaluated with `wopeval eval --fixture-runs`, offline, against
the unchanged agent, which passes every task with no live call.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from wopeval.wire.suite import parse_suite

from ._support import PROJECT, Result, ServedHost, run_cli

COUNTER = "conformance-agent-counter"
COUNTER_AGENT = "conformance.scripted-agent"
LOOKUP_AGENT = "cli.good"


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _record(served: ServedHost, workflow: str, inputs: dict[str, Any], *tags: str) -> str:
    tagged = [option for tag in tags for option in ("--tag", tag)]
    done = served.cli("run", workflow, "--input", json.dumps(inputs), *tagged)
    assert done.code in (0, 1), done.stderr
    return done.stdout.split()[0]


def _from_runs(served: ServedHost, out: Path, *args: str, agent: str = LOOKUP_AGENT) -> Result:
    return served.cli(
        "suites", "from-runs", *args, "--suite-id", "cli.prod.evals.replay",
        "--version", "1.0.0", "--agent", agent, "-o", str(out),
    )  # fmt: skip


def _written(out: Path) -> tuple[dict[str, Any], dict[str, str]]:
    suite = json.loads(out.read_text(encoding="utf-8"))
    parse_suite(suite)
    fixture_runs = json.loads(out.with_name(f"{out.stem}.fixture-runs.json").read_text())
    return suite, fixture_runs


def test_runs_tagged_prod_become_a_suite_that_replays_offline_and_passes(tmp_path: Path) -> None:
    host = ["--project", str(PROJECT), "--data-dir", str(tmp_path / "prod")]
    recorded = []
    for key in ("order-1", "order-2", "order-3"):
        done = run_cli("run", "cli-lookup", "--input", json.dumps({"lookup": key}),
                       "--tag", "prod", *host)  # fmt: skip
        assert done.code == 0, done.stderr
        recorded.append(done.stdout.split()[0])
    failed = run_cli("run", "cli-raises", "--input", "{}", "--tag", "prod", *host)
    assert failed.code == 1
    failed_id = failed.stdout.split()[0]

    out = tmp_path / "ci" / "prod-suite.json"
    made = run_cli("suites", "from-runs", "--tag", "prod", "--suite-id",
                   "cli.prod.evals.replay", "--version", "1.0.0", "--agent", LOOKUP_AGENT,
                   "-o", str(out), *host)  # fmt: skip
    assert made.code == 0, made.stderr
    map_file = tmp_path / "ci" / "prod-suite.fixture-runs.json"
    assert str(out) in made.stdout
    assert str(map_file) in made.stdout
    assert "tasks         3" in made.stdout
    assert f"skipped run {failed_id}: it is failed, not completed" in made.stderr
    suite, fixture_runs = _written(out)
    assert suite["targetAgentId"] == LOOKUP_AGENT
    assert suite["modes"] == ["golden", "regression"]
    assert [task["input"] for task in suite["tasks"]] == [
        {"lookup": "order-1"}, {"lookup": "order-2"}, {"lookup": "order-3"}
    ]  # fmt: skip
    assert [task["expected"]["match"] for task in suite["tasks"]] == [
        {"strategy": "exact", "value": f"order-{n}-value"} for n in (1, 2, 3)
    ]
    assert list(fixture_runs.values()) == recorded
    assert list(fixture_runs) == [f"run-{run_id.partition('/')[2][:12]}" for run_id in recorded]
    assert run_cli("suites", "validate", str(out)).code == 0

    evaluated = run_cli("eval", str(out), "--agent", LOOKUP_AGENT,
                        "--fixture-runs", str(map_file), "--offline", "--tag", "prod",
                        "--json", "-", *host)  # fmt: skip
    assert evaluated.code == 0, evaluated.stderr
    result = json.loads(evaluated.stdout)
    assert result["summary"]["passed"] is True
    assert result["summary"]["fixtureMissCount"] == 0
    assert "Live tool calls  0" in evaluated.stderr

    # The eval run carries the tag too, but only workflow runs become tasks.
    again = run_cli("suites", "from-runs", "--tag", "prod", "--suite-id", "cli.prod.evals.replay",
                    "--version", "1.0.1", "--agent", LOOKUP_AGENT, "-o", str(out), "--json",
                    *host)  # fmt: skip
    assert again.code == 0, again.stderr
    assert json.loads(again.stdout)["taskCount"] == 3


def test_runs_named_by_id_with_each_expectation_pass_on_the_host(
    served: ServedHost, tmp_path: Path
) -> None:
    answer = {"action": "refund", "amount": 3}
    # One call each: a run whose agent made none is idle, and left out without --include-idle.
    calls = [{"tool": "conformance.eval:counter", "args": {"op": "read", "key": _unique("ids")}}]
    first = _record(served, COUNTER, {"calls": calls, "answer": answer})
    second = _record(served, COUNTER, {"calls": calls, "answer": {"action": "deny"}})
    expected: dict[str, list[dict[str, Any]]] = {
        "auto": [{"strategy": "json-match", "value": answer},
                 {"strategy": "json-match", "value": {"action": "deny"}}],
        "json-match": [{"strategy": "json-match", "value": answer},
                       {"strategy": "json-match", "value": {"action": "deny"}}],
        "exact": [{"strategy": "exact", "value": answer},
                  {"strategy": "exact", "value": {"action": "deny"}}],
        "json-subset": [{"strategy": "json-subset", "value": answer},
                        {"strategy": "json-subset", "value": {"action": "deny"}}],
        "none": [{"strategy": "contains", "value": ""}] * 2,
    }  # fmt: skip
    for patch, (expect, matches) in enumerate(expected.items()):
        out = tmp_path / f"{expect}.json"
        done = served.cli("suites", "from-runs", first, second, "--suite-id",
                          "cli.ids.evals.replay", "--version", f"1.0.{patch}", "--agent",
                          COUNTER_AGENT, "--expect", expect, "-o", str(out), "--json")  # fmt: skip
        assert done.code == 0, done.stderr
        summary = json.loads(done.stdout)
        assert summary["taskCount"] == 2
        assert list(summary["tasks"].values()) == [first, second]
        suite, fixture_runs = _written(out)
        assert [task["expected"]["match"] for task in suite["tasks"]] == matches
        assert fixture_runs == summary["tasks"]

        assert served.cli("suites", "push", str(out)).code == 0
        evaluated = served.cli("eval", f"cli.ids.evals.replay@1.0.{patch}", "--agent",
                               COUNTER_AGENT, "--fixture-runs",
                               str(out.with_name(f"{expect}.fixture-runs.json")))  # fmt: skip
        assert evaluated.code == 0, (expect, evaluated.stdout, evaluated.stderr)


def test_by_default_a_json_decision_is_expected_by_its_paths_and_text_exactly(
    served: ServedHost, tmp_path: Path
) -> None:
    """No --expect: the expectation follows the decision's type, so when the agent's decision
    changes, a JSON one's reason names each differing path and a text one's stays exact."""
    calls = [{"tool": "conformance.eval:counter", "args": {"op": "read", "key": _unique("auto")}}]
    ticket = {"priority": "urgent", "queue": "billing"}
    runs = [
        _record(served, COUNTER, {"calls": calls, "answer": ticket}),
        _record(served, COUNTER, {"calls": calls, "answer": "urgent"}),
    ]
    out = tmp_path / "auto.json"
    done = served.cli("suites", "from-runs", *runs, "--suite-id", "cli.auto.evals.replay",
                      "--version", "1.0.0", "--agent", COUNTER_AGENT, "-o", str(out))  # fmt: skip
    assert done.code == 0, done.stderr
    suite, fixture_runs = _written(out)
    assert [task["expected"]["match"] for task in suite["tasks"]] == [
        {"strategy": "json-match", "value": ticket},
        {"strategy": "exact", "value": "urgent"},
    ]
    # The agent now decides otherwise: the same tool calls, another answer.
    for task, changed in zip(
        suite["tasks"], ({**ticket, "priority": "normal"}, "normal"), strict=True
    ):
        task["input"]["answer"] = changed
    suite["version"] = "1.0.1"
    out.write_text(json.dumps(suite), encoding="utf-8")
    map_file = out.with_name("auto.fixture-runs.json")
    evaluated = served.cli("eval", str(out), "--agent", COUNTER_AGENT,
                           "--fixture-runs", str(map_file), "--json", "-")  # fmt: skip
    assert evaluated.code == 1, evaluated.stdout + evaluated.stderr
    reasons = {task["taskId"]: task["reason"] for task in json.loads(evaluated.stdout)["tasks"]}
    json_task, text_task = fixture_runs
    assert reasons[json_task] == (
        'json-match: 1 path differs: $.priority: expected "urgent", got "normal"'
    )
    assert reasons[text_task] == (
        'exact: the decision "normal" differs from the expected value "urgent"'
    )


def test_a_node_with_an_input_of_its_own_gives_the_task_that_input(
    served: ServedHost, tmp_path: Path
) -> None:
    run_id = _record(served, "cli-fixed", {"lookup": "not what the agent saw"})
    done = _from_runs(served, tmp_path / "fixed.json", run_id)
    assert done.code == 0, done.stderr
    (task,) = _written(tmp_path / "fixed.json")[0]["tasks"]
    assert task["input"] == {"lookup": "fixed"}
    assert task["expected"]["match"]["value"] == "fixed-value"


def test_task_ids_from_a_tag_or_an_input_path(served: ServedHost, tmp_path: Path) -> None:
    tag = _unique("prod")
    runs = [
        _record(served, "cli-lookup", {"lookup": key, "order": {"id": f"ord-{n}"}}, tag,
                f"case={key}")
        for n, key in enumerate(["refund", "cancel"])
    ]  # fmt: skip
    by_tag = _from_runs(served, tmp_path / "tag.json", "--tag", tag, "--task-id-from", "tag:case=")
    assert by_tag.code == 0, by_tag.stderr
    assert _written(tmp_path / "tag.json")[1] == {"refund": runs[0], "cancel": runs[1]}
    by_input = _from_runs(served, tmp_path / "input.json", *runs, "--task-id-from",
                          "input:order.id")  # fmt: skip
    assert by_input.code == 0, by_input.stderr
    assert _written(tmp_path / "input.json")[1] == {"ord-0": runs[0], "ord-1": runs[1]}

    lacking = _from_runs(served, tmp_path / "x.json", *runs, "--task-id-from", "tag:ticket=")
    assert lacking.code == 4
    assert f"run {runs[0]} has no tag starting with 'ticket='" in lacking.stderr
    no_path = _from_runs(served, tmp_path / "x.json", *runs, "--task-id-from", "input:order.no")
    assert no_path.code == 4
    assert f"run {runs[0]} has no string or integer at inputs.order.no" in no_path.stderr
    same = _from_runs(served, tmp_path / "x.json", *runs, "--task-id-from", "input:lookup")
    assert same.code == 0  # distinct values: fine
    twice = _record(served, "cli-lookup", {"lookup": "refund"})
    clash = _from_runs(served, tmp_path / "x.json", runs[0], twice, "--task-id-from",
                       "input:lookup")  # fmt: skip
    assert clash.code == 4
    assert f"runs {runs[0]} and {twice} both make task 'refund'" in clash.stderr
    bad_rule = _from_runs(served, tmp_path / "y.json", *runs, "--task-id-from", "header:x")
    assert bad_rule.code == 4
    assert "tag:PREFIX or input:PATH" in bad_rule.stderr


def test_unusable_runs_and_bad_usage_exit_4_naming_the_problem(
    served: ServedHost, tmp_path: Path
) -> None:
    out = tmp_path / "suite.json"
    good = _record(served, "cli-lookup", {"lookup": "k"})
    missing = "clitest/" + "0" * 32
    foreign = "elsewhere/" + good.partition("/")[2]
    for absent in (missing, foreign):
        done = _from_runs(served, out, good, absent)
        assert done.code == 4
        assert f"run {absent}: no such run for this key" in done.stderr
    failed = _record(served, "cli-raises", {})
    done = _from_runs(served, out, good, failed)
    assert done.code == 4
    assert f"run {failed} is failed, not completed" in done.stderr
    other_agent = _from_runs(served, out, good, agent="cli.bad")
    assert other_agent.code == 4
    assert f"run {good} did not invoke agent cli.bad (it invoked cli.good)" in other_agent.stderr
    evaluated = served.cli("eval", "cli.test.evals.basic@1.0.0", "--agent", LOOKUP_AGENT)
    eval_run = next(w for w in evaluated.stderr.split() if w.startswith("clitest/"))
    done = _from_runs(served, out, eval_run)
    assert done.code == 4
    assert f"run {eval_run} is an eval run, not a workflow run" in done.stderr

    tag = _unique("prod")
    _record(served, "cli-lookup", {"lookup": "k"}, tag)
    nothing = _from_runs(served, out, "--tag", _unique("none"))
    assert nothing.code == 4
    assert "no completed workflow run of agent cli.good carries tag" in nothing.stderr
    later = _from_runs(served, out, "--tag", tag, "--since", "2999-01-01")
    assert later.code == 4
    assert "created after 2999-01-01" in later.stderr
    assert _from_runs(served, tmp_path / "since.json", "--tag", tag, "--since", "1h").code == 0

    for args, hint in [
        ((good, "--tag", tag), "not both"),
        ((), "not both"),
        ((good, "--since", "1h"), "only with --tag"),
        ((good, "--expect", "fuzzy"), "auto, exact, json-match, json-subset, none"),
    ]:
        done = _from_runs(served, out, *args)
        assert done.code == 4, args
        assert hint in done.stderr, (args, done.stderr)
    invalid = served.cli("suites", "from-runs", good, "--suite-id", "Not Valid", "--version",
                         "1.0.0", "--agent", LOOKUP_AGENT, "-o", str(out))  # fmt: skip
    assert invalid.code == 4
    assert "the suite made from the runs is not valid: suiteId:" in invalid.stderr
    assert not out.exists()
    assert not out.with_name("suite.fixture-runs.json").exists()
