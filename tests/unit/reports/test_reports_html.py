"""reports/html.py: self-contained, escaped, with the right charts."""

from __future__ import annotations

import re

from wopeval import evals
from wopeval.reports import RunFacts, html_report
from wopeval.wire.suite import parse_suite
from wopeval.wire.summary import EvalSummary


def _summary(trials: int, passed: dict[str, int]) -> EvalSummary:
    suite = parse_suite(
        {
            "suiteId": "unit.reports.evals.html",
            "version": "1.0.0",
            "modes": ["golden", "regression"],
            "trials": trials,
            "tasks": [
                {"taskId": t, "input": None, "expected": {"kind": "golden",
                 "match": {"strategy": "exact", "value": "x"}}}
                for t in passed
            ],
        }
    )  # fmt: skip
    return evals.summarise(
        suite,
        {
            t: [evals.TrialOutcome(passed=i < n, latency_ms=3) for i in range(trials)]
            for t, n in passed.items()
        },
    )


HOSTILE = RunFacts(
    run_id='t/<img src=x onerror="alert(1)">',
    agent_id="<script>alert(2)</script>",
    fixture_runs={"a": "t/&<>\"'"},
)


def _html(summary: EvalSummary, facts: RunFacts = HOSTILE) -> str:
    return html_report(summary, facts, generated_at="<now>")


def test_everything_from_the_run_is_escaped() -> None:
    html = _html(_summary(1, {"a": 1}))
    assert "<script" not in html
    assert "<img" not in html
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in html
    assert "t/&amp;&lt;&gt;&quot;&#x27;" in html
    assert "&lt;now&gt;" in html


def test_the_report_is_self_contained() -> None:
    html = _html(_summary(1, {"a": 1}))
    urls = set(re.findall(r"(?:https?:)?//[^\s\"'<>)]+", html))
    assert urls == {"http://www.w3.org/2000/svg"}  # the SVG namespace is a name, not a fetch
    assert "<link" not in html
    assert "<script" not in html


def test_without_baseline_a_score_chart_and_no_trial_chart() -> None:
    html = _html(_summary(1, {"a": 1, "b": 0}))
    assert 'id="score-chart"' in html
    assert 'id="delta-chart"' not in html
    assert 'id="trial-chart"' not in html
    assert html.count("<tr data-task-id=") == 2


def test_with_baseline_and_trials_the_delta_and_trial_charts() -> None:
    base = _summary(5, {"a": 5, "b": 5})
    judged = evals.with_regression(_summary(5, {"a": 5, "b": 0}), "t/" + "0" * 16, base)
    html = _html(judged)
    assert 'id="delta-chart"' in html
    assert 'id="trial-chart"' in html
    assert 'class="headline tone-regressed"' in html
    assert html.count('class="bar bar-regressed"') == 1


def test_each_task_shows_its_latency_and_cost_and_the_run_its_total() -> None:
    plain = _summary(1, {"a": 1, "b": 0})
    priced = plain.model_copy(
        update={
            "totalCostUsd": 0.25,
            "tasks": [t.model_copy(update={"costUsd": 0.125}) for t in plain.tasks],
        }
    )
    html = _html(priced)
    assert "<th>Latency</th><th>Cost</th>" in html
    assert re.search(r'data-task-id="a".*?<td>3 ms</td><td>\$0\.125000</td>', html)
    assert 'Total cost</div><div class="v">$0.250000' in html
    assert "Total cost" not in _html(plain)
