"""The HTML report in a real browser: headless Chromium (Debian's) driven by Playwright.

Skipped only on a developer machine without /usr/bin/chromium; under CI (`CI`
set) a missing browser fails the test instead. `playwright install` is never
used: the browser is the distribution's. The drill-down tests read the report
of a real eval run: `wopeval eval` on the first-agent example (docs/why.md).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from _processes import WOPEVAL, child_env
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
    assert reset[:8] == ["reset", "1.00", "0.00", "-1.00", "0/10", "0", "no", "regressed"]
    # Ten trials a side: the Holm-adjusted p-value and the flaky flag have columns.
    assert re.fullmatch(r"[0-9.e-]+", reset[8])
    assert float(reset[8]) < 0.05
    assert reset[9] == "no"
    assert page.locator('#task-table tr[data-task-id="outage"] td').all_inner_texts()[9] == "yes"

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
    # The agent id carried markup; it shows as text and never runs: the only script is the
    # report's own (and its policy would refuse any other).
    assert page.locator("script").count() == 1
    assert "<script>alert('agent')</script>" in page.locator("#run").inner_text()


# ── a real run's report: drill-down, sorting, filtering ──────────────

EXAMPLE = Path(__file__).parents[2] / "examples" / "first-agent"
DESK_TASKS = ["small-refund", "large-refund", "no-order", "express"]


@pytest.fixture(scope="module")
def desk_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The HTML report `wopeval eval` writes for a real run of the first-agent example."""
    where = tmp_path_factory.mktemp("desk")
    report = where / "report.html"
    done = subprocess.run(
        [WOPEVAL, "eval", "first.evals.desk@1.0.0", "--agent", "first.desk",
         "--project", str(EXAMPLE), "--data-dir", str(where / "data"), "--html", str(report)],
        capture_output=True, text=True, env=child_env(), timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr  # three of four tasks fail
    return report


@pytest.fixture
def desk(browser: Browser, desk_report: Path) -> Iterator[Page]:
    context = browser.new_context(offline=True)
    try:
        opened = context.new_page()
        requests: list[str] = []
        opened.on("request", lambda request: requests.append(request.url))
        errors: list[str] = []
        opened.on("pageerror", lambda error: errors.append(str(error)))
        opened.goto(desk_report.as_uri())
        yield opened
        assert errors == []
        assert all(url.startswith("file://") for url in requests), requests
    finally:
        context.close()


def _order(page: Page) -> list[str]:
    groups = page.locator("#task-table tbody.task")
    return [groups.nth(i).get_attribute("data-task-id") or "" for i in range(groups.count())]


def _visible(page: Page) -> list[str]:
    rows = page.locator("#task-table tr[data-task-id]")
    return [
        rows.nth(i).get_attribute("data-task-id") or ""
        for i in range(rows.count())
        if rows.nth(i).is_visible()
    ]


def test_a_failing_tasks_drilldown_shows_its_diff_and_trace(desk: Page) -> None:
    refund = desk.locator("#why-small-refund")
    diff = refund.locator("table.diff")
    assert not diff.is_visible()  # closed until asked
    refund.locator("summary").click()
    assert diff.is_visible()
    assert diff.locator("tr.change-removed").inner_text().split("\t")[1:] == [
        "$.amount", "40", "(absent)",
    ]  # fmt: skip
    assert diff.locator("tr.change-added").inner_text().split("\t")[1:] == [
        "$.amount_eur", "(absent)", "40",
    ]  # fmt: skip
    call = refund.locator("table.trace tr.served-fixture")
    assert call.is_visible()
    assert call.locator("td.served").inner_text() == "replayed"
    assert refund.locator("dd.actual").inner_text() == '{"action":"refund","amount_eur":40}'


def test_a_miss_shows_in_the_trace_with_its_argument_diff(desk: Page) -> None:
    express = desk.locator("#why-express")
    express.locator("summary").click()
    call = express.locator("table.trace tr.served-miss")
    assert call.is_visible()
    assert call.locator("td.served").inner_text() == "MISS"
    miss = express.locator(".miss")
    assert miss.is_visible()
    assert "closest recording toolResponses[0]" in miss.inner_text()
    assert miss.locator("tr.change-added").inner_text().split("\t")[1:] == [
        "$.express", "(absent)", "true",
    ]  # fmt: skip


def test_an_agent_exception_shows_what_it_raised(desk: Page) -> None:
    raised = desk.locator("#why-no-order")
    raised.locator("summary").click()
    assert raised.locator("dd.raised").inner_text() == "KeyError: 'order'"
    assert desk.locator('tr[data-task-id="no-order"] td.reason').inner_text() == (
        "the agent raised KeyError: 'order'"
    )


def test_the_task_table_sorts_by_a_column_and_back(desk: Page) -> None:
    assert _order(desk) == DESK_TASKS
    task = desk.locator("#task-table thead th", has_text="Task")
    task.click()
    assert _order(desk) == sorted(DESK_TASKS)
    assert task.get_attribute("aria-sort") == "ascending"
    task.click()
    assert _order(desk) == sorted(DESK_TASKS, reverse=True)
    misses = desk.locator("#task-table thead th", has_text="Misses")
    misses.click()
    misses.click()  # descending: the task with a miss first
    assert _order(desk)[0] == "express"
    # Sorting moves each drill-down with its task.
    first = desk.locator("#task-table tbody.task").first
    assert first.locator("details").get_attribute("id") == "why-express"


def test_the_task_table_filters_by_text_and_by_state(desk: Page) -> None:
    assert desk.locator("#task-count").inner_text() == "4 of 4 tasks"
    desk.locator("#task-filter").fill("keyerror")
    assert _visible(desk) == ["no-order"]
    desk.locator("#task-filter").fill("")
    desk.locator("#task-show").select_option("failing")
    assert _visible(desk) == ["small-refund", "no-order", "express"]
    assert desk.locator("#task-count").inner_text() == "3 of 4 tasks"


def test_without_scripts_the_table_still_reads_and_the_drilldowns_open(
    browser: Browser, desk_report: Path
) -> None:
    context = browser.new_context(offline=True, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(desk_report.as_uri())
        assert not page.locator("#task-controls").is_visible()  # nothing to drive them
        assert _visible(page) == DESK_TASKS
        express = page.locator("#why-express")
        express.locator("summary").click()
        assert express.locator("table.trace tr.served-miss").is_visible()
    finally:
        context.close()
