"""Why a task failed, from the command line: `explain`, the reason lines, JUnit, `--json -`.

Every case reads real runs of the first-agent example (`examples/first-agent`,
the agent docs/why.md reads): a wrong field (a golden diff), a `KeyError` (an
agent exception) and an argument no recording has (a fixture miss with its
argument diff), beside one task that passes. One `wopeval serve` on that
project serves the module; one eval run of it, with every report written, is
shared by the tests that only read it.
"""

from __future__ import annotations

import json
import secrets
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from _backends import Backend
from _processes import ServeOptions, ServeProcess
from wopeval.wire import ids

from ._junit import outcomes
from ._support import ServedHost, run_cli

EXAMPLE = Path(__file__).parents[2] / "examples" / "first-agent"
SUITE = "first.evals.desk@1.0.0"
AGENT = "first.desk"
FAILING = ["small-refund", "no-order", "express"]
REASONS = {
    "small-refund": "json-match: 2 paths differ: $.amount: expected 40, got (absent); "
    "$.amount_eur: expected (absent), got 40",
    "no-order": "the agent raised KeyError: 'order'",
    "express": "fixture miss: no unconsumed fixture matches this call to shop:order; closest: "
    "toolResponses[0], 1 path differs: $.express: recorded (absent), the call has true",
}
"""The host's reason for each failing task (docs/why.md shows the same lines)."""


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedHost]:
    data_dir = tmp_path_factory.mktemp("desk")
    key = "why_" + secrets.token_urlsafe(24)
    serve = ServeProcess(ServeOptions(data_dir, None, (f"why={key}",), EXAMPLE), data_dir / "log")
    try:
        serve.wait_up()
        yield ServedHost(serve.url, key)
    finally:
        serve.stop()


@dataclass(frozen=True)
class EvalRun:
    run_id: str
    stdout: str
    junit: Path


@pytest.fixture(scope="module")
def evaluated(desk: ServedHost, tmp_path_factory: pytest.TempPathFactory) -> EvalRun:
    out = tmp_path_factory.mktemp("reports")
    junit, document = out / "junit.xml", out / "eval.json"
    reports = ("--junit", str(junit), "--json", str(document))
    result = desk.cli("eval", SUITE, "--agent", AGENT, *reports)
    assert result.code == 1, result.stdout + result.stderr  # three of four tasks fail
    return EvalRun(str(result.json_file(document)["runId"]), result.stdout, junit)


def _route(desk: ServedHost, run_id: str, task_id: str | None = None) -> Any:
    path = f"/host/wopeval/runs/{ids.project(run_id)}/tasks" + (f"/{task_id}" if task_id else "")
    with desk.http() as http:
        response = http.get(path)
    assert response.status_code == 200, response.text
    return response.json()


def test_eval_prints_each_failing_tasks_reason_under_the_table(evaluated: EvalRun) -> None:
    lines = evaluated.stdout.splitlines()
    why = lines.index("Why")
    assert "│ express" in lines[why - 2]  # the last row of the table just above
    for offset, task_id in enumerate(FAILING, start=1):
        assert lines[why + offset] == f"  {task_id.ljust(12)}  {REASONS[task_id]}"
    assert f"wopeval explain {evaluated.run_id} shows the diffs" in lines[why + 4]
    assert "large-refund  " not in "\n".join(lines[why:])


def test_explain_shows_each_failing_task_with_its_diff_trace_and_misses(
    desk: ServedHost, evaluated: EvalRun
) -> None:
    result = desk.cli("explain", evaluated.run_id)
    assert result.code == 0, result.stdout + result.stderr
    text = _plain(result.stdout)
    blocks = _blocks(text)
    assert list(blocks) == FAILING  # the passing task is not explained
    refund = blocks["small-refund"]
    assert f"reason     {REASONS['small-refund']}" in refund
    assert 'expected   json-match {"action":"refund","amount":40}' in refund
    assert 'actual     {"action":"refund","amount_eur":40}' in refund
    assert "- $.amount     expected 40       → got (absent)" in refund
    assert "+ $.amount_eur expected (absent) → got 40" in refund
    assert "#0 shop:order  replayed  ok" in refund
    assert 'args   {"order_id":"A-1001"}' in refund
    raised = blocks["no-order"]
    assert "raised     KeyError: 'order'" in raised
    assert "trace      no tool calls" in raised
    express = blocks["express"]
    assert "#0 shop:order  MISS  error" in express
    assert 'args   {"order_id":"A-1003","express":true}' in express
    assert "MISS       call #0 to shop:order: closest recording toolResponses[0]" in express
    assert 'recorded {"order_id":"A-1003"}' in express
    assert "+ $.express recorded (absent) → call true" in express


def test_explain_one_task_shows_every_trial_even_a_passing_one(
    desk: ServedHost, evaluated: EvalRun
) -> None:
    result = desk.cli("explain", evaluated.run_id, "large-refund")
    assert result.code == 0, result.stdout + result.stderr
    text = _plain(result.stdout)
    assert list(_blocks(text)) == ["large-refund"]
    assert "trial 0 passed" in text
    assert "#0 shop:order  replayed  ok" in text


def test_explain_json_is_what_the_task_routes_return(desk: ServedHost, evaluated: EvalRun) -> None:
    one = desk.cli("explain", evaluated.run_id, "express", "--json")
    assert one.code == 0, one.stderr
    assert json.loads(one.stdout) == _route(desk, evaluated.run_id, "express")
    every = desk.cli("explain", evaluated.run_id, "--json")
    assert every.code == 0, every.stderr
    document = json.loads(every.stdout)
    assert document["runId"] == evaluated.run_id
    assert document["tasks"] == _route(desk, evaluated.run_id)["tasks"]
    assert document["details"] == [_route(desk, evaluated.run_id, t) for t in FAILING]


def test_explain_refuses_a_task_or_run_it_does_not_have(
    desk: ServedHost, evaluated: EvalRun
) -> None:
    no_task = desk.cli("explain", evaluated.run_id, "nope")
    assert no_task.code == 4
    assert "has no task 'nope' (its tasks: small-refund, large-refund, no-order, express)" in (
        no_task.stderr
    )
    no_run = desk.cli("explain", "why/" + "0" * 32)
    assert no_run.code == 4
    assert "not_found" in no_run.stderr


def test_the_junit_failure_holds_the_reason_its_body_the_diff_and_trace(
    evaluated: EvalRun,
) -> None:
    cases = outcomes(evaluated.junit)  # valid against the schema
    assert {task: cases[task] for task in FAILING} == {
        task: ("failure", REASONS[task]) for task in FAILING
    }
    assert cases["large-refund"] == ("passed", "")
    testcases = {c.get("name"): c for c in ET.parse(evaluated.junit).getroot().iter("testcase")}
    refund = testcases["small-refund"]
    body = refund.findtext("failure") or ""
    assert "    - $.amount: 40 → (absent)" in body
    assert "    + $.amount_eur: (absent) → 40" in body
    assert '    #0 shop:order [replayed] ok {"order_id":"A-1001"} → ' in body
    assert refund.findtext("system-out") == 'trial 0 decision: {"action":"refund","amount_eur":40}'
    express = testcases["express"].findtext("failure") or ""
    assert '#0 shop:order [MISS] error {"order_id":"A-1003","express":true}' in express
    assert "  miss: call #0 to shop:order: closest recording toolResponses[0]" in express
    assert "      + $.express: (absent) → true" in express
    assert "  raised:   KeyError: 'order'" in (testcases["no-order"].findtext("failure") or "")


def test_json_dash_writes_the_document_alone_to_stdout(
    desk: ServedHost, evaluated: EvalRun
) -> None:
    result = desk.cli("report", evaluated.run_id, "--json", "-")
    assert result.code == 0, result.stderr
    document = json.loads(result.stdout)  # nothing else on stdout
    assert document["runId"] == evaluated.run_id
    assert {t["taskId"]: t["reason"] for t in document["tasks"]} == {
        **REASONS, "large-refund": "passed"
    }  # fmt: skip
    assert "│ small-refund" in result.stderr  # the table went to stderr
    assert not Path("-").exists()


def test_explain_on_an_embedded_host(backend: Backend, tmp_path: Path) -> None:
    host = ["--data-dir", str(tmp_path / "data"), "--project", str(EXAMPLE)]
    database = backend.new_database()
    host += ["--database-url", database] if database else []
    out = tmp_path / "eval.json"
    evaluated = run_cli("eval", SUITE, "--agent", AGENT, "--json", str(out), *host)
    assert evaluated.code == 1, evaluated.stdout + evaluated.stderr
    run_id = json.loads(out.read_text())["runId"]
    result = run_cli("explain", run_id, "no-order", *host)
    assert result.code == 0, result.stdout + result.stderr
    assert "raised     KeyError: 'order'" in _plain(result.stdout)


def _plain(text: str) -> str:
    """The output without the trailing blanks Rich pads table cells with."""
    return "\n".join(line.rstrip() for line in text.splitlines())


def _blocks(text: str) -> dict[str, str]:
    """Task id → its block in `explain`'s output (a block starts at `<task>  FAILED|passed`)."""
    blocks: dict[str, str] = {}
    current: list[str] = []
    for line in text.splitlines():
        head = line.split("  ")[0]
        if line and not line.startswith(" ") and ("  FAILED" in line or "  passed" in line):
            current = []
            blocks[head] = ""
        current.append(line)
        if blocks:
            blocks[list(blocks)[-1]] = "\n".join(current)
    return blocks


def test_the_docs_show_these_reasons_and_this_explanation() -> None:
    """docs/why.md pastes a real run of this example: its lines must stay the host's."""
    docs = (Path(__file__).parents[2] / "docs" / "why.md").read_text(encoding="utf-8")
    for task_id in FAILING:
        assert f"  {task_id.ljust(12)}  {REASONS[task_id]}\n" in docs
    assert f'<failure type="failed" message="{REASONS["small-refund"]}">' in docs
    for line in (
        "    diff       - $.amount     expected 40       → got (absent)",
        "               + $.amount_eur expected (absent) → got 40",
        "    trace      #0 shop:order  MISS  error  0 ms",
        "    MISS       call #0 to shop:order: closest recording toolResponses[0]",
        "               + $.express recorded (absent) → call true",
        "    raised     KeyError: 'order'",
    ):
        assert line in docs
