"""The dashboard in a real browser: Debian's Chromium driving a real host with real runs.

One host per backend for the module, on a data directory where `run_demo`
first recorded the demo's production runs, its v1 baseline and its regressed
v2 candidate. On top of those, tenant `dev` runs the conformance regression
pair, an agent whose decision and tool args are markup, a `hash` agent and,
per test, gated runs held active until the test lets them go. Every page is
photographed at 1400 px (reports/screenshots/, kept by CI) and checked with
axe-core (axe-playwright-python ships it: nothing is fetched).
"""

from __future__ import annotations

import secrets
import struct
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from openwop_client.types import CreateRunRequest
from openwop_client.wire_id import project_id

from _backends import Backend
from e2e._gate import Gate
from e2e._server import ServerHandle, free_port, running_host
from e2e._support import NOOP_WORKFLOW, wait_terminal
from e2e.evals._evals import (
    REGRESSION_BASE,
    REGRESSION_CANDIDATE,
    EvalRun,
    golden,
    new_suite_id,
    publish,
    run_eval,
    start_eval,
    suite,
)
from wopeval.api.ui import compare_page
from wopeval.demo import DemoResult, run_demo
from wopeval.settings import Settings

from ._chromium import CHROMIUM, CHROMIUM_ARGS, require_chromium

require_chromium()

from axe_playwright_python.sync_playwright import Axe  # noqa: E402
from playwright.sync_api import (  # noqa: E402
    Browser,
    BrowserContext,
    Dialog,
    Page,
    expect,
    sync_playwright,
)

PROJECT = Path(__file__).parent / "project"
PROJECT_MODULE = "wopeval_browser_project"
SCREENSHOTS = Path(__file__).resolve().parents[2] / "reports" / "screenshots"
WIDTH = 1400
DEV = "dev"
TENANT_B = "tenant-b"
MARKUP = "<img src=x onerror=alert(1)>"
HASHED_SECRET = "hashed-secret-" + "x" * 8
BOTH_MODES = ["golden", "regression"]
LIVE_TIMEOUT_MS = 30_000
DEMO_REGRESSION = "plan-change"


@dataclass(frozen=True)
class Dashboard:
    server: ServerHandle
    backend: str
    demo: DemoResult
    base: EvalRun
    candidate: EvalRun
    markup_run: str
    markup_eval: EvalRun
    hashed_run: str
    tag: str
    """The tag of this module's own workflow runs."""

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def url(self, path: str) -> str:
        return self.server.base_url + path

    def http(self) -> httpx.Client:
        return self.server.http(DEV)


def run_page(run_id: str) -> str:
    return f"/ui/runs/{project_id(run_id)}"


def eval_page(run_id: str) -> str:
    return f"/ui/evals/{project_id(run_id)}"


def _workflow_run(server: ServerHandle, workflow: str, inputs: dict[str, Any], tag: str) -> str:
    request = CreateRunRequest(workflowId=workflow, inputs=inputs, tags=[tag])
    run_id: str = server.client(DEV).runs_create(request).runId
    return run_id


@pytest.fixture(scope="module")
def dashboard(backend: Backend, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    data_dir = tmp_path_factory.mktemp(f"dashboard-{backend.name}") / "host"
    database_url = backend.new_database()
    demo = run_demo(data_dir, data_dir.parent / "report.html", database_url=database_url)
    assert demo.as_designed, demo.problems
    settings = Settings(
        data_dir=data_dir,
        database_url=database_url,
        api_keys={
            DEV: "wop_dev_" + secrets.token_hex(16),
            TENANT_B: "wop_b_" + secrets.token_hex(16),
        },
        port=free_port(),
        project=PROJECT,
    )
    tag = f"browser-{uuid.uuid4().hex[:8]}"
    try:
        with running_host(settings, backend) as server, server.http(DEV) as http:
            client = server.client(DEV)
            base = run_eval(client, http, REGRESSION_BASE)
            candidate = run_eval(
                client, http, REGRESSION_CANDIDATE, evalModes=BOTH_MODES, baselineRunId=base.run_id
            )
            markup_run = _workflow_run(server, "browser-markup", {}, tag)
            hashed_calls = [
                {"tool": "conformance.eval:counter", "args": {"op": "inc", "key": HASHED_SECRET}}
            ]
            hashed_run = _workflow_run(
                server, "browser-hashed", {"calls": hashed_calls, "answer": "done"}, tag
            )
            for run_id in (markup_run, hashed_run):
                assert wait_terminal(client, run_id)[-1].type == "run.completed"
            markup_suite = suite(
                new_suite_id("markup"),
                [{"taskId": "markup", "input": {}, "expected": golden("<b>plain</b>")}],
                target="browser.markup",
            )
            markup_eval = run_eval(client, http, publish(http, markup_suite), "browser.markup")
            yield Dashboard(
                server,
                backend.name,
                demo,
                base,
                candidate,
                markup_run,
                markup_eval,
                hashed_run,
                tag,
            )
    finally:
        sys.path[:] = [p for p in sys.path if p != str(PROJECT.resolve())]
        sys.modules.pop(PROJECT_MODULE, None)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@dataclass
class Session:
    """A browser context signed in as one tenant, noting every URL it requested."""

    context: BrowserContext
    requested: list[str]
    dialogs: list[str]

    def page(self) -> Page:
        opened = self.context.new_page()
        opened.on("dialog", self._dialog)
        return opened

    def _dialog(self, dialog: Dialog) -> None:
        """A dialog opened: note it (a test fails on any) and close it."""
        self.dialogs.append(dialog.message)
        dialog.dismiss()


def _context(browser: Browser) -> tuple[BrowserContext, list[str]]:
    context = browser.new_context(viewport={"width": WIDTH, "height": 900})
    requested: list[str] = []
    context.on("request", lambda request: requested.append(request.url))
    return context, requested


def sign_in(page: Page, dashboard: Dashboard, tenant: str) -> None:
    page.goto(dashboard.url("/ui/sign-in"))
    page.fill("#key", dashboard.server.keys[tenant])
    page.click("form.stack button[type=submit]")
    page.wait_for_url(dashboard.url("/ui/runs"))


def _session(browser: Browser, dashboard: Dashboard, tenant: str) -> Iterator[Session]:
    context, requested = _context(browser)
    session = Session(context, requested, [])
    first = session.page()
    sign_in(first, dashboard, tenant)
    first.close()
    try:
        yield session
    finally:
        context.close()
    # Everything a page loaded came from the host itself: no CDN, no other site.
    assert all(url.startswith(dashboard.base_url + "/") for url in requested), requested
    assert session.dialogs == [], session.dialogs


@pytest.fixture(scope="module")
def dev(browser: Browser, dashboard: Dashboard) -> Iterator[Session]:
    yield from _session(browser, dashboard, DEV)


@pytest.fixture(scope="module")
def tenant_b(browser: Browser, dashboard: Dashboard) -> Iterator[Session]:
    yield from _session(browser, dashboard, TENANT_B)


@pytest.fixture
def page(dev: Session) -> Iterator[Page]:
    opened = dev.page()
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def gate(tmp_path: Path) -> Iterator[Gate]:
    made = Gate(tmp_path / "entered", tmp_path / "gate")
    try:
        yield made
    finally:
        made.release()


def run_ids(page: Page, table: str = "#runs-table") -> list[str]:
    rows = page.locator(f"{table} tbody tr")
    return [str(rows.nth(i).get_attribute("data-run-id")) for i in range(rows.count())]


def check_page(page: Page, dashboard: Dashboard, name: str) -> None:
    """Photograph the page at 1400 px for CI, and hold it to axe-core's rules."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOTS / f"{name}-{dashboard.backend}.png"
    page.screenshot(path=str(shot), full_page=True)
    width, _ = struct.unpack(">II", shot.read_bytes()[16:24])  # the PNG's IHDR
    assert width == WIDTH
    # Legible at that width: nothing needs a horizontal scroll.
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH
    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_report()


# ── signing in ───────────────────────────────────────────────────────


def test_sign_in_exchanges_the_key_for_a_session_cookie_and_sign_out_ends_it(
    browser: Browser, dashboard: Dashboard
) -> None:
    context, requested = _context(browser)
    try:
        page = context.new_page()
        page.goto(dashboard.url("/ui/runs"))
        expect(page).to_have_url(dashboard.url("/ui/sign-in?next=%2Fui%2Fruns"))
        check_page(page, dashboard, "sign-in")

        page.fill("#key", "wop_not_a_key_of_this_host")
        with page.expect_response(dashboard.url("/ui/sign-in")) as refused:
            page.click("form.stack button[type=submit]")
        assert refused.value.status == 401
        expect(page.locator(".problem")).to_contain_text("not valid")

        key = dashboard.server.keys[DEV]
        page.fill("#key", key)
        page.click("form.stack button[type=submit]")
        page.wait_for_url(dashboard.url("/ui/runs"))
        expect(page.locator("header .who strong")).to_have_text(DEV)
        (cookie,) = [c for c in context.cookies() if c["name"] == "wopeval_session"]
        assert cookie["httpOnly"] is True
        assert cookie["sameSite"] == "Strict"
        assert cookie["path"] == "/ui"
        assert key not in cookie["value"]
        # The key is nowhere the page's scripts could read it; the session is HttpOnly.
        stored = page.evaluate(
            "JSON.stringify(localStorage) + JSON.stringify(sessionStorage) + document.cookie"
        )
        assert key not in stored
        assert "wopeval_session" not in stored
        assert all(key not in url for url in requested)

        page.click("header .who button")
        page.wait_for_url(dashboard.url("/ui/sign-in"))
        page.goto(dashboard.url("/ui/runs"))
        expect(page).to_have_url(dashboard.url("/ui/sign-in?next=%2Fui%2Fruns"))
    finally:
        context.close()


# ── runs ─────────────────────────────────────────────────────────────


def _apply(page: Page, **fields: str) -> None:
    page.goto(page.url.split("?")[0])
    for name, value in fields.items():
        selector = f"#f-{name}"
        if name in ("kind", "status"):
            page.select_option(selector, value)
        else:
            page.fill(selector, value)
    page.click("form.filters button[type=submit]")
    page.wait_for_load_state()


def test_the_runs_page_lists_runs_newest_first_and_filters_them(
    dashboard: Dashboard, page: Page
) -> None:
    page.goto(dashboard.url("/ui/runs"))
    listed = run_ids(page)
    # Newest first: the module's runs in reverse order of creation.
    mine = [dashboard.markup_eval.run_id, dashboard.hashed_run, dashboard.markup_run]
    assert [run for run in listed if run in mine] == mine
    assert dashboard.demo.candidate_run_id in listed
    check_page(page, dashboard, "runs")

    _apply(page, tag=dashboard.tag)
    assert set(run_ids(page)) == {dashboard.markup_run, dashboard.hashed_run}
    assert f"tag={dashboard.tag}" in page.url
    _apply(page, kind="eval", suite="conformance.openwop.evals.regression")
    assert set(run_ids(page)) == {dashboard.base.run_id, dashboard.candidate.run_id}
    _apply(page, agent="browser.markup")
    assert set(run_ids(page)) == {dashboard.markup_run, dashboard.markup_eval.run_id}
    _apply(page, tag=dashboard.tag, status="failed")
    assert run_ids(page) == []
    expect(page.locator(".empty")).to_have_text("No runs match.")
    _apply(page, tag=dashboard.tag, **{"from": "2999-01-01T00:00"})
    assert run_ids(page) == []
    _apply(page, tag=dashboard.tag, to="2999-01-01T00:00")
    assert set(run_ids(page)) == {dashboard.markup_run, dashboard.hashed_run}


def test_the_runs_page_pages_through_the_runs(dashboard: Dashboard, page: Page) -> None:
    tag = f"paging-{uuid.uuid4().hex[:8]}"
    client = dashboard.server.client(DEV)
    created = [
        client.runs_create(CreateRunRequest(workflowId=NOOP_WORKFLOW, tags=[tag])).runId
        for _ in range(51)
    ]
    page.goto(dashboard.url(f"/ui/runs?tag={tag}"))
    first = run_ids(page)
    assert first == created[::-1][:50]
    # Each page is a navigation: wait for the new document before reading its rows.
    page.click("nav.pager a[rel=next]")
    page.wait_for_url("**/ui/runs?*cursor=*")
    assert run_ids(page) == [created[0]]
    expect(page.locator("nav.pager a[rel=next]")).to_have_count(0)
    page.click("nav.pager >> text=Newest runs")
    page.wait_for_url(dashboard.url(f"/ui/runs?tag={tag}"))
    assert run_ids(page) == first


def test_the_runs_page_follows_an_active_run_to_its_end(
    dashboard: Dashboard, page: Page, gate: Gate
) -> None:
    tag = f"live-{uuid.uuid4().hex[:8]}"
    run_id = _workflow_run(dashboard.server, "browser-gate", gate.inputs(), tag)
    gate.wait_entered()
    page.goto(dashboard.url(f"/ui/runs?tag={tag}"))
    row = page.locator(f'#runs-table tr[data-run-id="{run_id}"]')
    expect(row).to_have_attribute("data-status", "running")
    page.evaluate("window.notReloaded = true")
    gate.release()
    expect(row).to_have_attribute("data-status", "completed", timeout=LIVE_TIMEOUT_MS)
    assert page.evaluate("window.notReloaded === true")


# ── a run ────────────────────────────────────────────────────────────


def test_the_run_page_shows_the_snapshot_timeline_and_tool_boundary(
    dashboard: Dashboard, page: Page
) -> None:
    page.goto(dashboard.url(run_page(dashboard.markup_run)))
    expect(page.locator("#run-status")).to_have_text("completed")
    types = page.locator("#timeline tbody tr")
    assert types.first.get_attribute("data-type") == "run.started"
    assert types.last.get_attribute("data-type") == "run.completed"
    (call,) = page.locator("#tool-table tbody tr").all()
    cells = call.locator("td").all_inner_texts()
    assert cells[1] == "browser.markup"
    assert cells[2] == "conformance.eval:counter"
    assert MARKUP in cells[3]
    assert cells[4] == "live"
    assert cells[5] == "ok"
    assert '"count": 1' in cells[7]
    check_page(page, dashboard, "run")


def test_the_tool_table_shows_a_hash_agents_calls_without_their_content(
    dashboard: Dashboard, page: Page
) -> None:
    page.goto(dashboard.url(run_page(dashboard.hashed_run)))
    table = page.locator("#tool-table")
    (call,) = table.locator("tbody tr").all()
    cells = call.locator("td").all_inner_texts()
    assert cells[3].startswith("sha256:")
    assert "hidden" in cells[7]
    assert HASHED_SECRET not in table.inner_text()
    assert HASHED_SECRET not in page.locator("#timeline").inner_text()


def test_agent_markup_renders_as_text(dashboard: Dashboard, dev: Session, page: Page) -> None:
    response = page.goto(dashboard.url(run_page(dashboard.markup_run)))
    assert response is not None
    policy = response.headers["content-security-policy"]
    assert "default-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy
    assert "'unsafe-inline'" not in policy
    assert MARKUP in page.locator("main").inner_text()
    assert page.locator("main img").count() == 0
    task = page.goto(dashboard.url(eval_page(dashboard.markup_eval.run_id) + "/tasks/markup"))
    assert task is not None
    assert task.status == 200
    expect(
        page.locator('details.trial[open] pre[aria-label="The agent\'s decision"]')
    ).to_have_text(f'"{MARKUP}"')
    assert page.locator("main img").count() == 0
    assert dev.dialogs == []


def test_cancel_from_the_run_page(dashboard: Dashboard, page: Page, gate: Gate) -> None:
    tag = f"cancel-{uuid.uuid4().hex[:8]}"
    run_id = _workflow_run(dashboard.server, "browser-gate", gate.inputs(), tag)
    gate.wait_entered()
    page.goto(dashboard.url(run_page(run_id)))
    expect(page.locator("#run-status")).to_have_text("running")
    button = page.locator("details.cancel button")
    expect(button).to_be_hidden()  # the confirmation is one step away
    page.click("details.cancel summary")
    button.click()
    page.wait_for_url(dashboard.url(run_page(run_id)))
    expect(page.locator("#run-status")).to_have_text("cancelled", timeout=LIVE_TIMEOUT_MS)
    expect(page.locator("details.cancel")).to_have_count(0)
    with dashboard.http() as http:
        snapshot = http.get(f"/runs/{project_id(run_id)}").json()
    assert snapshot["status"] == "cancelled"
    expect(page.locator('#timeline tr[data-type="run.cancelled"]')).to_contain_text(
        "cancelled from the dashboard"
    )


# ── eval runs ────────────────────────────────────────────────────────


def test_a_running_eval_page_updates_live_to_its_end(
    dashboard: Dashboard, page: Page, gate: Gate
) -> None:
    held = {"taskId": "held", "input": gate.inputs(), "expected": golden("released")}
    with dashboard.http() as http:
        ref = publish(http, suite(new_suite_id("held"), [held], target="browser.gate"))
    run_id = start_eval(dashboard.server.client(DEV), ref, "browser.gate")
    gate.wait_entered()
    page.goto(dashboard.url(eval_page(run_id)))
    expect(page.locator("#run-status")).to_have_text("running")
    expect(page.locator("details.cancel")).to_have_count(1)
    page.evaluate("window.notReloaded = true")
    gate.release()
    expect(page.locator("#run-status")).to_have_text("completed", timeout=LIVE_TIMEOUT_MS)
    assert page.evaluate("window.notReloaded === true")
    expect(page.locator('#task-table tr[data-task-id="held"] td').nth(1)).to_have_text("pass")
    expect(page.locator(".cards")).to_contain_text("Score 1.00")
    expect(page.locator("details.cancel")).to_have_count(0)


def test_an_eval_runs_failing_task_shows_its_diff_and_trace(
    dashboard: Dashboard, page: Page
) -> None:
    demo = dashboard.demo
    page.goto(dashboard.url(eval_page(demo.candidate_run_id)))
    expect(page.locator("#run-status")).to_have_text("completed")
    expect(page.locator("#baseline-link")).to_have_text(demo.baseline_run_id)
    check_page(page, dashboard, "eval")
    page.click("nav.tabs >> text=regressed")
    rows = page.locator("#task-table tbody tr")
    expect(rows).to_have_count(1)
    assert rows.first.get_attribute("data-task-id") == DEMO_REGRESSION
    page.click(f"#task-table >> text={DEMO_REGRESSION}")
    page.wait_for_url(f"**/tasks/{DEMO_REGRESSION}")
    trial = page.locator("details.trial[open]")
    changed = trial.locator("table.diff tr.change-changed")
    expect(changed).to_have_count(1)
    assert changed.locator("td").all_inner_texts() == [
        "$.priority",
        "changed",
        '"high"',
        '"normal"',
    ]
    calls = trial.locator("table.trace tbody tr")
    assert calls.count() >= 2
    assert set(calls.locator(".badge").all_inner_texts()) == {"fixture"}
    expect(page.locator("#trial-table tbody tr")).to_have_count(1)
    check_page(page, dashboard, "task")


def test_the_task_table_sorts_and_filters(dashboard: Dashboard, page: Page) -> None:
    page.goto(dashboard.url(eval_page(dashboard.base.run_id)))
    # Each tab and each sort is a page of its own: wait for it before reading its rows.
    page.click("nav.tabs >> text=failed")
    expect(page.locator('nav.tabs a[aria-current="true"]')).to_have_text("failed")
    assert [
        r.get_attribute("data-task-id") for r in page.locator("#task-table tbody tr").all()
    ] == ["base-only"]
    page.click("nav.tabs >> text=all")
    expect(page.locator('nav.tabs a[aria-current="true"]')).to_have_text("all")
    page.click("#task-table th >> text=Score")
    expect(page.locator('#task-table th[aria-sort="ascending"]')).to_have_text("Score")
    ascending = [
        r.get_attribute("data-task-id") for r in page.locator("#task-table tbody tr").all()
    ]
    assert ascending == ["base-only", "shared-a", "shared-b"]
    page.click("#task-table th >> text=Score")
    expect(page.locator('#task-table th[aria-sort="descending"]')).to_have_text("Score")
    descending = [
        r.get_attribute("data-task-id") for r in page.locator("#task-table tbody tr").all()
    ]
    assert descending == ["shared-b", "shared-a", "base-only"]


# ── compare ──────────────────────────────────────────────────────────


def test_compare_from_a_candidates_baseline_link_shows_unchanged_and_one_sided_tasks(
    dashboard: Dashboard, page: Page
) -> None:
    page.goto(dashboard.url(eval_page(dashboard.candidate.run_id)))
    page.click("#compare-link")
    page.wait_for_url("**/ui/compare?**")
    expect(page.locator("#run-verdict")).to_have_text("unchanged")
    expect(page.locator("#baseline-only li")).to_have_text(["base-only"])
    expect(page.locator("#candidate-only li")).to_have_text(["candidate-only"])
    rows = page.locator("#compare-table tbody tr")
    assert {r.get_attribute("data-task-id") for r in rows.all()} == {"shared-a", "shared-b"}
    assert {r.get_attribute("data-verdict") for r in rows.all()} == {"unchanged"}


def test_compare_the_demo_baseline_and_candidate_puts_the_regressed_task_first(
    dashboard: Dashboard, page: Page
) -> None:
    demo = dashboard.demo
    page.goto(dashboard.url("/ui/compare"))
    page.select_option("#pick-baseline", project_id(demo.baseline_run_id))
    page.select_option("#pick-candidate", project_id(demo.candidate_run_id))
    page.click("form.filters button[type=submit]")
    expect(page.locator("#run-verdict")).to_have_text("regressed")
    rows = page.locator("#compare-table tbody tr")
    expect(rows).to_have_count(len(demo.candidate.tasks))
    assert rows.first.get_attribute("data-task-id") == DEMO_REGRESSION
    assert rows.first.get_attribute("data-verdict") == "regressed"
    assert rows.first.locator("td").nth(3).inner_text() == "-1.00"
    chart = page.locator("svg#delta-chart")
    expect(chart.locator("rect.bar")).to_have_count(len(demo.candidate.tasks))
    expect(chart.locator("rect.bar-regressed")).to_have_count(1)
    (side_by_side,) = page.locator("article.side-by-side").all()
    assert side_by_side.get_attribute("data-task-id") == DEMO_REGRESSION
    expect(side_by_side.locator("table.trace")).to_have_count(2)
    expect(side_by_side.locator("section").nth(0)).to_contain_text("passed")
    expect(side_by_side.locator("section").nth(1)).to_contain_text("$.priority")
    check_page(page, dashboard, "compare")


def test_the_compare_pickers_show_the_runs_the_query_names(
    dashboard: Dashboard, page: Page, monkeypatch: pytest.MonkeyPatch
) -> None:
    demo = dashboard.demo
    # The pickers offer only the newest eval run: the demo's are older.
    monkeypatch.setattr(compare_page, "CHOICES", 1)
    page.goto(dashboard.url("/ui/compare"))
    offered = page.locator("#pick-baseline option").evaluate_all("(os) => os.map(o => o.value)")
    assert project_id(demo.baseline_run_id) not in offered
    # Named as `wopeval` prints them, and in the address's own form.
    query = f"baseline={demo.baseline_run_id}&candidate={project_id(demo.candidate_run_id)}"
    page.goto(dashboard.url(f"/ui/compare?{query}"))
    expect(page.locator("#pick-baseline")).to_have_value(project_id(demo.baseline_run_id))
    expect(page.locator("#pick-candidate")).to_have_value(project_id(demo.candidate_run_id))
    expect(page.locator("#run-verdict")).to_have_text("regressed")
    check_page(page, dashboard, "compare-query")
    # The form sends what it shows.
    with page.expect_navigation():
        page.click("form.filters button[type=submit]")
    expect(page.locator("#run-verdict")).to_have_text("regressed")
    expect(page.locator("#pick-baseline")).to_have_value(project_id(demo.baseline_run_id))
    # A run the query names that is not among one's own: the page of an unknown run.
    unknown = page.goto(
        dashboard.url(
            f"/ui/compare?{query.replace(demo.baseline_run_id, DEV + '/' + uuid.uuid4().hex)}"
        )
    )
    assert unknown is not None
    assert unknown.status == 404
    expect(page.locator("#refusal-message")).to_have_text("No run with this id is among your runs.")


# ── suites ───────────────────────────────────────────────────────────


def test_the_suites_page_lists_versions_documents_and_their_eval_runs(
    dashboard: Dashboard, page: Page
) -> None:
    page.goto(dashboard.url("/ui/suites"))
    row = page.locator('#suites-table tr[data-suite-id="conformance.openwop.evals.regression"]')
    expect(row).to_contain_text("1.0.0")
    expect(row).to_contain_text("1.1.0")
    check_page(page, dashboard, "suites")
    # The rows are read at once (`all()` does not wait): first the suite's page, loaded.
    with page.expect_navigation():
        row.locator("a").click()
    base = page.locator('section.version[data-version="1.0.0"]')
    candidate = page.locator('section.version[data-version="1.1.0"]')
    expect(base).to_be_attached()
    assert dashboard.base.run_id in run_ids_of(base)
    assert dashboard.candidate.run_id not in run_ids_of(base)
    assert dashboard.candidate.run_id in run_ids_of(candidate)
    candidate.locator("summary").click()
    expect(candidate.locator("pre")).to_contain_text('"candidate-only"')
    check_page(page, dashboard, "suite")


def run_ids_of(section: Any) -> list[str]:
    return [str(r.get_attribute("data-run-id")) for r in section.locator("tbody tr").all()]


# ── tenants ──────────────────────────────────────────────────────────


def test_another_tenants_run_and_an_unknown_one_get_one_page_saying_what_to_do(
    dashboard: Dashboard, tenant_b: Session
) -> None:
    page = tenant_b.page()
    try:
        existing = dashboard.markup_run
        unknown = f"{DEV}/{uuid.uuid4().hex}"
        own_unknown = f"{TENANT_B}/{uuid.uuid4().hex}"
        answers = []
        for path in (
            run_page(existing),
            run_page(unknown),
            run_page(own_unknown),
            f"/ui/runs/{existing}",  # pasted as `wopeval runs list` prints it
            eval_page(dashboard.markup_eval.run_id),
            eval_page(unknown),
            eval_page(dashboard.markup_eval.run_id) + "/tasks/markup",
            eval_page(unknown) + "/tasks/markup",
            f"/ui/compare?baseline={project_id(dashboard.base.run_id)}",
        ):
            response = page.goto(dashboard.url(path))
            assert response is not None
            assert response.headers["content-type"].startswith("text/html")
            answers.append((response.status, response.text()))
        assert {status for status, _ in answers} == {404}
        assert len({body for _, body in answers}) == 1, "a refusal differs with the run"
        assert existing.partition("/")[2] not in answers[0][1]
        main = page.locator("main")
        expect(main.locator("h1")).to_have_text("404 not_found")
        expect(main).to_contain_text("No run with this id is among your runs.")
        expect(main.locator("#refusal-advice")).to_contain_text("wopeval runs list")
        expect(main.locator("#refusal-advice strong")).to_have_text(TENANT_B)
        check_page(page, dashboard, "refusal-run")
        main.locator("#refusal-advice a", has_text="runs list").click()
        page.wait_for_url(dashboard.url("/ui/runs"))
        assert run_ids(page) == []
    finally:
        page.close()


def test_a_pasted_run_id_opens_its_page_and_an_unknown_page_says_where_to_go(
    dashboard: Dashboard, page: Page
) -> None:
    run_id = dashboard.markup_run
    page.goto(dashboard.url(f"/ui/runs/{run_id}"))
    expect(page).to_have_url(dashboard.url(run_page(run_id)))
    expect(page.locator("h1")).to_contain_text(run_id)
    bad_form = page.goto(dashboard.url(f"/ui/runs/{run_id.partition('/')[2]}"))
    assert bad_form is not None
    assert bad_form.status == 400
    expect(page.locator("#refusal-advice")).to_contain_text("~2F")
    check_page(page, dashboard, "refusal-run-id")
    missing = page.goto(dashboard.url("/ui/no-such-page"))
    assert missing is not None
    assert missing.status == 404
    expect(page.locator("#refusal-message")).to_have_text("No such page.")
    check_page(page, dashboard, "refusal-page")
    page.locator("#refusal-advice a", has_text="suites").click()
    page.wait_for_url(dashboard.url("/ui/suites"))


def test_an_ended_session_lands_on_the_sign_in_page_saying_so_and_naming_the_key_file(
    browser: Browser, dashboard: Dashboard
) -> None:
    context, _ = _context(browser)
    try:
        context.add_cookies(
            [{"name": "wopeval_session", "value": "ended", "url": dashboard.url("/ui/")}]
        )
        page = context.new_page()
        page.goto(dashboard.url("/ui/compare"))
        expect(page).to_have_url(dashboard.url("/ui/sign-in?next=%2Fui%2Fcompare"))
        expect(page.locator("#session-ended")).to_contain_text("Your session has ended")
        expect(page.locator("#key-file")).to_contain_text(".wopeval-demo/dev-api-key")
        expect(page.locator("#key-file")).to_contain_text("<data-dir>/dev-api-key")
        check_page(page, dashboard, "sign-in-ended")
        page.fill("#key", dashboard.server.keys[DEV])
        page.click("form.stack button[type=submit]")
        page.wait_for_url(dashboard.url("/ui/compare"))
    finally:
        context.close()


# ── labelling a task's output ────────────────────────────────────────


def _labels_of(dashboard: Dashboard, run_id: str) -> list[Any]:
    return dashboard.server.client(DEV).list_annotations(run_id) or []


def test_a_reviewer_labels_a_tasks_output_from_the_eval_page(
    dashboard: Dashboard, page: Page
) -> None:
    run_id = dashboard.base.run_id
    page.goto(dashboard.url(eval_page(run_id) + "?show=failed"))
    row = page.locator('#task-table tbody tr[data-task-id="base-only"]')
    row.get_by_label("Note on base-only").fill("the answer is right; the grader is wrong")
    row.get_by_role("button", name="Label base-only pass").click()
    # Back on the page it came from, the filter kept, the label shown.
    page.wait_for_url("**show=failed**")
    row = page.locator('#task-table tbody tr[data-task-id="base-only"]')
    expect(row.locator(".review")).to_have_attribute("data-review", "pass")
    expect(row.locator(".review-note")).to_have_text("the answer is right; the grader is wrong")
    check_page(page, dashboard, "eval-labelled")
    (label,) = [a for a in _labels_of(dashboard, run_id) if a.target.get("nodeId") == "base-only"]
    assert label.signal == {"kind": "label", "label": "pass"}
    assert label.actor["principalRef"].startswith("urn:wopeval:api-key:")
    # A label is no event: the run's log is as it was.
    assert [e.type for e in wait_terminal(dashboard.server.client(DEV), run_id)] == [
        e.type for e in dashboard.base.events
    ]


def test_a_reviewer_labels_the_candidates_output_from_the_compare_page(
    dashboard: Dashboard, page: Page
) -> None:
    demo = dashboard.demo
    query = (
        f"baseline={project_id(demo.baseline_run_id)}&candidate={project_id(demo.candidate_run_id)}"
    )
    page.goto(dashboard.url(f"/ui/compare?{query}"))
    row = page.locator(f'#compare-table tbody tr[data-task-id="{DEMO_REGRESSION}"]')
    row.get_by_role("button", name=f"Label {DEMO_REGRESSION} fail").click()
    page.wait_for_url(f"**/ui/compare?{query}")
    row = page.locator(f'#compare-table tbody tr[data-task-id="{DEMO_REGRESSION}"]')
    expect(row.locator(".review")).to_have_attribute("data-review", "fail")
    with dashboard.server.http(DEV) as http:
        listed = http.get(f"/runs/{project_id(demo.candidate_run_id)}/annotations").json()
    (label,) = listed["annotations"]
    assert label["target"] == {"runId": demo.candidate_run_id, "nodeId": DEMO_REGRESSION}
    assert label["signal"] == {"kind": "label", "label": "fail"}
    assert "note" not in label


def test_a_label_form_from_another_tenant_gets_the_unknown_runs_refusal(
    dashboard: Dashboard, tenant_b: Session
) -> None:
    page = tenant_b.page()
    try:
        page.goto(dashboard.url("/ui/runs"))
        csrf = page.locator('input[name="csrf"]').first.get_attribute("value")
        answers = []
        for run_id in (dashboard.base.run_id, f"{DEV}/{uuid.uuid4().hex}"):
            response = page.request.post(
                dashboard.url(eval_page(run_id) + "/tasks/base-only/label"),
                form={"csrf": str(csrf), "label": "fail"},
                headers={"Origin": dashboard.base_url},
            )
            answers.append((response.status, response.text()))
        assert {status for status, _ in answers} == {404}
        assert answers[0][1] == answers[1][1]
    finally:
        page.close()
    labels = [
        a for a in _labels_of(dashboard, dashboard.base.run_id) if a.signal["label"] == "fail"
    ]
    assert labels == []
