"""The pull request's summary (`--markdown`): verdict first, regressed tasks first, reasons,
and never longer than a GitHub comment."""

from __future__ import annotations

from datetime import UTC, datetime

from wopeval import evals
from wopeval.reports import BaselineFacts, RunFacts, markdown_report
from wopeval.reports.markdown import BUDGET
from wopeval.wire.suite import parse_suite
from wopeval.wire.summary import EvalSummary

from ._details import RUN_ID, WRONG_REASON, run_why

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
BASELINE = "t/" + "0" * 32


def _summary(passed: dict[str, bool], suite_id: str = "unit.reports.evals.md") -> EvalSummary:
    suite = parse_suite(
        {"suiteId": suite_id, "version": "1.0.0", "modes": ["golden", "regression"],
         "tasks": [{"taskId": t, "input": None,
                    "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "x"}}}
                   for t in passed]}
    )  # fmt: skip
    return evals.summarise(
        suite, {t: [evals.TrialOutcome(passed=ok, latency_ms=3)] for t, ok in passed.items()}
    )


def _judged(base: dict[str, bool], candidate: dict[str, bool]) -> EvalSummary:
    return evals.with_regression(_summary(candidate), BASELINE, _summary(base))


FACTS = RunFacts(
    run_id=RUN_ID,
    agent_id="support.desk",
    live_calls=0,
    revision="4f2a9c1e",
    baseline=BaselineFacts(BASELINE, tags=("main", "nightly"), completed_at="2026-12-01T09:00:00Z"),
)


def test_the_headline_names_the_verdict_and_the_facts_name_run_agent_revision_and_baseline() -> (
    None
):
    text = markdown_report(_judged({"a": True}, {"a": False}), FACTS, exit_code=2, now=NOW)
    first = text.splitlines()[0]
    assert first.startswith("### 🔴 REGRESSED — ")
    assert "exit 2" in first
    assert "`unit.reports.evals.md@1.0.0`" in first
    assert f"- **Run:** `{RUN_ID}`" in text
    assert "- **Agent:** `support.desk` at `4f2a9c1e`" in text
    assert f"- **Baseline:** `{BASELINE}` tagged `main`, `nightly`, 3 h old" in text
    assert "- **Live tool calls:** 0" in text
    assert "- **Fixture misses:** 0" in text


def test_regressed_then_inconclusive_tasks_lead_the_table() -> None:
    summary = _judged(
        {"fine": True, "worse": True, "also-fine": True},
        {"fine": True, "worse": False, "also-fine": True},
    )
    rows = [line for line in markdown_report(summary, FACTS, now=NOW).splitlines()
            if line.startswith("| `")]  # fmt: skip
    assert [row.split("`")[1] for row in rows] == ["worse", "fine", "also-fine"]
    assert "🔴 regressed" in rows[0]
    assert "⚪ unchanged" in rows[1]


def test_each_failing_task_gets_its_reason_on_one_escaped_line() -> None:
    summary = _summary({"wrong": False, "passed": True})
    text = markdown_report(summary, RunFacts(run_id=RUN_ID), why=run_why("wrong", "passed"))
    assert "**Why**" in text
    (line,) = [line for line in text.splitlines() if line.startswith("- `wrong`")]
    assert "json-match: 1 path differs" in line
    assert "\\$.city" not in line  # `$` is not Markdown
    assert WRONG_REASON.split(":")[0] in line
    assert not any(line.startswith("- `passed`") for line in text.splitlines())


def test_a_huge_suite_is_cut_to_fit_a_comment_and_says_so() -> None:
    many = {f"task-{i:05d}-with-a-long-name-to-fill-the-table": False for i in range(3000)}
    text = markdown_report(_summary(many), RunFacts(run_id=RUN_ID), now=NOW)
    assert len(text) <= BUDGET + 100
    assert text.rstrip().endswith("more rows left out to fit a comment._")
    assert text.startswith("### ❌ FAILED")


def test_without_a_baseline_the_headline_is_the_thresholds() -> None:
    text = markdown_report(_summary({"a": True}), RunFacts(run_id=RUN_ID), exit_code=0)
    assert text.startswith("### ✅ PASSED")
    assert "**Baseline:**" not in text
    assert "Verdict" not in text
