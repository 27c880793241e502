"""The HTML report in a real browser: headless Chromium (Debian's) driven by Playwright."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from wopeval import evals
from wopeval.reports import RunFacts, html_report
from wopeval.wire.suite import parse_suite

from ._chromium import CHROMIUM, CHROMIUM_ARGS, require_chromium

require_chromium()

from playwright.sync_api import Browser, Page, sync_playwright  # noqa: E402

TASKS = ["refund", "reset", "outage", "upgrade"]


def _summary_html(tmp_path: Path) -> Path:
    """A real summary built by the eval domain: four tasks of ten trials, one regression."""
    suite = parse_suite(
        {
            "suiteId": "browser.test.evals.report",
            "version": "1.2.0",
            "modes": ["golden", "regression"],
            "trials": 10,
            "passPolicy": "majority",
            "tasks": [
                {"taskId": t, "input": {}, "expected": {"kind": "golden",
                 "match": {"strategy": "exact", "value": "x"}}}
                for t in TASKS
            ],
        }
    )  # fmt: skip

    def trials(passed: int) -> list[evals.TrialOutcome]:
        return [evals.TrialOutcome(passed=i < passed, latency_ms=20) for i in range(10)]

    baseline = evals.summarise(suite, {t: trials(10) for t in TASKS})
    candidate = evals.summarise(
        suite,
        {"refund": trials(10), "reset": trials(0), "outage": trials(7), "upgrade": trials(10)},
    )
    judged = evals.with_regression(candidate, "dev/" + "b" * 32, baseline)
    facts = RunFacts(
        run_id="dev/" + "c" * 32,
        status="completed",
        agent_id="<script>alert('agent')</script>",
        modes=("golden", "regression"),
        live_calls=0,
    )
    path = tmp_path / "report.html"
    path.write_text(html_report(judged, facts, generated_at="2026-11-29T00:00:00Z"), "utf-8")
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Browser, tmp_path: Path) -> Iterator[Page]:
    context = browser.new_context(offline=True)  # a self-contained report needs no network
    try:
        opened = context.new_page()
        requests: list[str] = []
        opened.on("request", lambda request: requests.append(request.url))
        opened.goto(_summary_html(tmp_path).as_uri())
        yield opened
        assert all(url.startswith("file://") for url in requests), requests
    finally:
        context.close()


def test_the_report_renders_its_table_and_charts(page: Page) -> None:
    assert page.title().startswith("wopeval — browser.test.evals.report@1.2.0")
    assert page.locator("#headline").inner_text() == "REGRESSED"
    rows = page.locator("#task-table tbody tr")
    assert rows.count() == len(TASKS)
    assert [rows.nth(i).get_attribute("data-task-id") for i in range(rows.count())] == TASKS
    reset = page.locator('#task-table tr[data-task-id="reset"] td').all_inner_texts()
    assert reset == ["reset", "1.00", "0.00", "-1.00", "0/10", "0", "no", "regressed"]

    chart = page.locator("svg#delta-chart")
    assert chart.is_visible()
    box = chart.bounding_box()
    assert box is not None
    assert box["width"] > 300
    assert box["height"] > 100
    assert chart.locator("rect.bar").count() == len(TASKS)
    assert chart.locator("rect.bar-regressed").count() == 1
    # Several trials per task: the pass-rate chart is there too.
    assert page.locator("svg#trial-chart rect.bar").count() == len(TASKS)


def test_the_report_escapes_what_the_run_says(page: Page) -> None:
    # The agent id carried markup; it shows as text and never runs.
    assert page.locator("script").count() == 0
    assert "<script>alert('agent')</script>" in page.locator("#run").inner_text()
