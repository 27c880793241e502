"""reports/html.py: self-contained, escaped, with the right charts, a drill-down per task."""

from __future__ import annotations

import base64
import hashlib
import re

from wopeval import evals
from wopeval.reports import RunFacts, RunWhy, html_report
from wopeval.wire.suite import parse_suite
from wopeval.wire.summary import EvalSummary

from ._details import HOSTILE, WRONG_REASON, run_why


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


HOSTILE_FACTS = RunFacts(
    run_id='t/<img src=x onerror="alert(1)">',
    agent_id="<script>alert(2)</script>",
    fixture_runs={"a": "t/&<>\"'"},
)


def _html(summary: EvalSummary, facts: RunFacts = HOSTILE_FACTS, why: RunWhy | None = None) -> str:
    return html_report(summary, facts, generated_at="<now>", why=why)


def _scripts(html: str) -> list[str]:
    return re.findall(r"<script>(.*?)</script>", html, re.DOTALL)


def test_everything_from_the_run_is_escaped() -> None:
    html = _html(_summary(1, {"a": 1}))
    assert html.count("<script") == 1  # the report's own, and no other
    assert "<img" not in html
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in html
    assert "t/&amp;&lt;&gt;&quot;&#x27;" in html
    assert "&lt;now&gt;" in html


def test_the_report_is_self_contained() -> None:
    html = _html(_summary(1, {"a": 1}))
    urls = set(re.findall(r"(?:https?:)?//[^\s\"'<>)]+", html))
    assert urls == {"http://www.w3.org/2000/svg"}  # the SVG namespace is a name, not a fetch
    assert "<link" not in html
    # The one inline script, allowed by its hash; the policy allows nothing else.
    (script,) = _scripts(html)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    (policy,) = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert policy.startswith("default-src 'none';")
    assert f"script-src 'sha256-{digest}'" in policy


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


def _why_summary(passed: dict[str, int], trials: int = 1) -> EvalSummary:
    suite = parse_suite(
        {"suiteId": "unit.reports.evals.why", "version": "1.0.0", "modes": ["golden"],
         "trials": trials,
         "tasks": [{"taskId": t, "input": None,
                    "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "x"}}}
                   for t in passed]}
    )  # fmt: skip
    return evals.summarise(
        suite,
        {
            t: [evals.TrialOutcome(passed=i < n, latency_ms=3) for i in range(trials)]
            for t, n in passed.items()
        },
    )


def test_each_task_gets_its_reason_and_a_drilldown_with_diff_trace_and_misses() -> None:
    summary = _why_summary({"wrong": 0, "missed": 0, "hashed": 0, "fine": 1})
    html = _html(summary, why=run_why("wrong", "missed", "hashed", "fine"))
    assert '<th class="reason">Reason</th>' in html
    assert f'<td class="reason" data-sort="{WRONG_REASON.replace(chr(34), "&quot;")}">' in html
    for task in ("wrong", "missed", "hashed"):
        assert f'<details id="why-{task}">' in html
    assert '<details id="why-fine">' not in html  # no detail was read for it
    # The agent's markup shows as text in the diff and the decision, never as markup.
    assert HOSTILE not in html
    assert html.count("&lt;script&gt;alert(&#x27;decision&#x27;)&lt;/script&gt;") == 2
    assert '<tr class="call served-fixture">' in html
    assert '<td class="served">replayed</td>' in html
    assert '<tr class="call served-live">' in html
    assert '<tr class="call served-miss">' in html
    assert '<td class="served">MISS</td>' in html
    assert "<strong>MISS</strong> call #0 to shop:order: closest recording toolResponses[0]" in html
    assert (
        '<tr class="change change-added"><td class="sign">+</td><td><code>$.express</code>' in html
    )
    assert "sha256:" + "6" * 64 in html  # a hash agent's decision: its hash only
    # Each task is a tbody of its own, so sorting moves its drill-down with it.
    assert html.count('<tbody class="task"') == 4
    assert 'data-task-id="wrong" data-passed="false"' in html


def test_the_p_value_and_flaky_columns_appear_with_multi_trial_pairs() -> None:
    base = _why_summary({"wrong": 4, "fine": 4}, trials=4)
    judged = evals.with_regression(_why_summary({"wrong": 2, "fine": 4}, trials=4), "t/0", base)
    html = _html(judged)
    assert "<th>p</th><th>Flaky</th>" in html
    assert (
        'data-task-id="wrong" data-passed="false" data-verdict="inconclusive" data-flaky="true"'
        in html
    )
    single = _html(
        evals.with_regression(_why_summary({"wrong": 0}), "t/0", _why_summary({"wrong": 1}))
    )
    assert "<th>p</th>" not in single


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
    cell = r'<td data-sort="[^"]*">'
    assert re.search(rf'data-task-id="a".*?{cell}3 ms</td>{cell}\$0\.125000</td>', html)
    assert 'Total cost</div><div class="v">$0.250000' in html
    assert "Total cost" not in _html(plain)
