"""reports/junit.py: one testcase per task; failures, skips and counts; schema-valid."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import xmlschema

from wopeval import evals
from wopeval.reports import junit_xml
from wopeval.wire.suite import Suite, parse_suite
from wopeval.wire.summary import EvalSummary

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
