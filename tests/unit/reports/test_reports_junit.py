"""reports/junit.py: one testcase per task; failures, skips and counts; schema-valid."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import xmlschema

from wopeval import evals
from wopeval.reports import junit_xml
from wopeval.wire.suite import Suite, parse_suite
from wopeval.wire.summary import EvalSummary

from ._details import HOSTILE, MISS_REASON, RUN_ID, WRONG_REASON, run_why

SCHEMA = xmlschema.XMLSchema(Path(__file__).parents[2] / "cli" / "junit.xsd")
TASKS = ("same", "broken", "wobbly", "fixed")


def _suite() -> Suite:
    return parse_suite(
        {
            "suiteId": "unit.reports.evals.junit",
            "version": "3.1.4",
            "modes": ["golden", "regression"],
            "passPolicy": "any",
            "tasks": [
                {"taskId": t, "input": None, "expected": {"kind": "golden",
                 "match": {"strategy": "exact", "value": "x"}}}
                for t in TASKS
            ],
        }
    )  # fmt: skip


def _summary(results: dict[str, list[bool]]) -> EvalSummary:
    return evals.summarise(
        _suite(),
        {
            t: [evals.TrialOutcome(passed=p, latency_ms=250) for p in ps]
            for t, ps in results.items()
        },
    )


BASE = {"same": [True] * 8, "broken": [True] * 8, "wobbly": [True] * 8, "fixed": [False] * 8}
CAND = {"same": [True] * 8, "broken": [False] * 8, "wobbly": [True, False] * 4, "fixed": [True] * 8}


def _cases(xml: str) -> dict[str, ET.Element]:
    SCHEMA.validate(xml)
    return {c.get("name", ""): c for c in ET.fromstring(xml).iter("testcase")}


def test_a_run_without_baseline() -> None:
    xml = junit_xml(_summary(CAND), run_id="t/" + "a" * 16)
    cases = _cases(xml)
    assert list(cases) == list(TASKS)
    assert {c.get("classname") for c in cases.values()} == {"unit.reports.evals.junit"}
    assert cases["same"].get("time") == "2.000"  # 8 trials × 250 ms
    failure = cases["broken"].find("failure")
    assert failure is not None
    assert failure.get("message") == "failed: score 0.00"
    assert cases["wobbly"].find("failure") is None  # passPolicy any
    suite = ET.fromstring(xml).find("testsuite")
    assert suite is not None
    assert (suite.get("name"), suite.get("tests"), suite.get("failures")) == (
        "unit.reports.evals.junit@3.1.4", "4", "1",
    )  # fmt: skip


def test_a_judged_run_marks_regressions_and_inconclusive_tasks() -> None:
    judged = evals.with_regression(_summary(CAND), "t/" + "b" * 16, _summary(BASE))
    xml = junit_xml(judged, run_id="t/" + "c" * 16, timestamp="2026-11-29T00:00:00Z")
    cases = _cases(xml)
    broken = cases["broken"].find("failure")
    assert broken is not None
    assert broken.get("type") == "regressed"
    assert broken.get("message", "").startswith("regressed: score 1.00 -> 0.00, delta -1.00, p=")
    assert "verdict: regressed" in (broken.text or "")
    wobbly = cases["wobbly"].find("skipped")
    assert wobbly is not None
    assert wobbly.get("message", "").startswith("inconclusive: score 1.00 -> 0.50, delta -0.50")
    assert cases["same"].find("*") is None
    assert cases["fixed"].find("*") is None  # improved
    suite = ET.fromstring(xml).find("testsuite")
    assert suite is not None
    assert (suite.get("failures"), suite.get("skipped"), suite.get("errors")) == ("1", "1", "0")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["baselineRunId"] == "t/" + "b" * 16
    assert props["verdict"] == "regressed"


def _why_suite_summary(passed: dict[str, bool]) -> EvalSummary:
    suite = parse_suite(
        {"suiteId": "unit.reports.evals.why", "version": "1.0.0", "modes": ["golden"],
         "tasks": [{"taskId": t, "input": None,
                    "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "x"}}}
                   for t in passed]}
    )  # fmt: skip
    return evals.summarise(
        suite, {t: [evals.TrialOutcome(passed=p, latency_ms=5)] for t, p in passed.items()}
    )


def test_with_the_hosts_details_a_failure_carries_its_reason_diff_trace_and_decision() -> None:
    summary = _why_suite_summary({"wrong": False, "raised": False, "missed": False, "fine": True})
    xml = junit_xml(summary, run_id=RUN_ID, why=run_why("wrong", "raised", "missed", "fine"))
    cases = _cases(xml)  # still valid against the schema, a NUL in an agent's stderr included
    wrong = cases["wrong"].find("failure")
    assert wrong is not None
    assert wrong.get("message") == WRONG_REASON
    body = wrong.text or ""
    assert f"reason: {WRONG_REASON}" in body
    assert '    ~ $.city: "Oslo" → "Bergen"' in body
    assert '    #0 weather:lookup [replayed] ok {"city":"Bergen"} → {"temp":4}' in body
    assert cases["wrong"].findtext("system-out") == (
        'trial 0 decision: {"city":"Bergen","note":"' + HOSTILE + '"}'
    )
    missed = cases["missed"].find("failure")
    assert missed is not None
    assert missed.get("message") == MISS_REASON
    assert "[MISS] error" in (missed.text or "")
    assert "      + $.express: (absent) → true" in (missed.text or "")
    raised = cases["raised"].find("failure")
    assert raised is not None
    assert raised.get("message") == "the agent raised KeyError: 'city'"
    assert "line\\u0000one" in (raised.text or "")  # XML 1.0 cannot hold a NUL: escaped
    assert cases["fine"].find("failure") is None


def test_a_regression_message_holds_the_reason_and_the_movement() -> None:
    base = _why_suite_summary({"wrong": True})
    judged = evals.with_regression(_why_suite_summary({"wrong": False}), "t/" + "b" * 16, base)
    failure = _cases(junit_xml(judged, why=run_why("wrong")))["wrong"].find("failure")
    assert failure is not None
    assert failure.get("message") == (
        f"regressed: {WRONG_REASON} (score 1.00 -> 0.00, delta -1.00)"
    )


def test_priced_model_calls_add_the_cost_and_latency_of_each_task() -> None:
    outcomes = {
        t: [evals.TrialOutcome(passed=True, latency_ms=120, cost_usd=0.0015)] * 2 for t in TASKS
    }
    xml = junit_xml(evals.summarise(_suite(), outcomes))
    props = {p.get("name"): p.get("value") for p in ET.fromstring(xml).iter("property")}
    assert props["totalCostUsd"] == "0.012000"  # 4 tasks × 2 trials × $0.0015
    cases = _cases(xml)
    assert (
        cases["same"].findtext("system-out")
        == "cost: $0.003000\nlatency: 120 ms (mean of its trials)"
    )
    unpriced = junit_xml(_summary(CAND))
    assert "totalCostUsd" not in unpriced
    assert "system-out" not in unpriced
