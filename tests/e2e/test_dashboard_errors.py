"""Every dashboard refusal is an HTML page that says what to do (docs/dashboard.md, "When a
page is refused"); the wire's refusals stay the OpenWOP JSON envelope.

Run on both stores, as a person would meet them: a run id pasted into an
address (another tenant's, an unknown one, one of the wrong form, one with its
`/`), a page that does not exist, a method no page takes, a refused form, a bad
query value, a session that is missing or has ended. The browser tier
(tests/browser/test_dashboard.py) shows the same pages in Chromium.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator

import httpx
import pytest
from openwop_client.wire_id import project_id

from wopeval.api.ui import compare_page
from wopeval.api.ui._route import NO_SUCH_RUN
from wopeval.api.ui._security import CONTENT_SECURITY_POLICY
from wopeval.wire import ids

from ._server import TENANT_A, TENANT_B, ServerHandle
from ._support import create_counter_run, unique, wait_terminal
from .evals._evals import REGRESSION_BASE, REGRESSION_CANDIDATE, run_eval
from .test_dashboard_http import _browser, _sign_in

_MAIN = re.compile(r"<main id=\"main\">(.*)</main>", re.S)
_SELECTED = re.compile(r'<option value="([^"]*)" selected>')


def _page(response: httpx.Response, status: int) -> str:
    """The `<main>` of a refusal page answered with `status`, held to the dashboard's headers."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    found = _MAIN.search(response.text)
    assert found is not None, response.text
    return found.group(1)


def _envelope(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["error"] == code
    assert set(body) <= {"error", "message", "details"}


@pytest.fixture(scope="module")
def a_run(server: ServerHandle) -> str:
    client = server.client(TENANT_A)
    run_id = create_counter_run(client, unique("dashboard-errors"))
    wait_terminal(client, run_id)
    return run_id


@pytest.fixture
def browser_a(server: ServerHandle) -> Iterator[httpx.Client]:
    with _browser(server) as client:
        _sign_in(client, server, TENANT_A)
        yield client


@pytest.fixture
def browser_b(server: ServerHandle) -> Iterator[httpx.Client]:
    with _browser(server) as client:
        _sign_in(client, server, TENANT_B)
        yield client


# ── a run id in an address ───────────────────────────────────────────

RUN_ADDRESSES = (
    "/ui/runs/{}",
    "/ui/evals/{}",
    "/ui/evals/{}/tasks/only",
    "/ui/compare?baseline={}",
    "/ui/compare?candidate={}",
    "/ui/live?run={}:-1",
)


def test_another_tenants_run_and_an_unknown_run_get_one_404_page(
    server: ServerHandle, browser_b: httpx.Client, a_run: str
) -> None:
    """Tenant B asks for A's run, for a run of A that does not exist and for one of its own
    that does not exist: one page, byte for byte, whatever the address or the form of the id."""
    asked = [a_run, f"{TENANT_A}/{uuid.uuid4().hex}", f"{TENANT_B}/{uuid.uuid4().hex}"]
    bodies = set()
    for template in RUN_ADDRESSES:
        for run_id in asked:
            answer = browser_b.get(template.format(project_id(run_id)))
            _page(answer, 404)
            bodies.add(answer.text)
            assert run_id.partition("/")[2] not in answer.text
    # Pasted as `wopeval` prints it, slash and all: the same page once the address is fixed.
    for run_id in asked:
        pasted = browser_b.get(f"/ui/runs/{run_id}", follow_redirects=True)
        _page(pasted, 404)
        bodies.add(pasted.text)
    (page,) = bodies
    assert NO_SUCH_RUN in page
    assert "wopeval runs list" in page
    assert 'href="/ui/runs"' in page
    assert "sign in with that tenant's API key" in page
    assert f"<strong>{TENANT_B}</strong>" in page


def test_a_run_id_of_the_wrong_form_gets_a_400_page_on_what_one_looks_like(
    browser_a: httpx.Client,
) -> None:
    bare = uuid.uuid4().hex
    twice = ids.project(ids.project(f"{TENANT_A}/{bare}"))
    for address in (
        f"/ui/runs/{bare}",
        f"/ui/evals/{bare}",
        f"/ui/runs/{twice}",
        "/ui/runs/~zz",
        f"/ui/compare?baseline={bare}",
    ):
        page = _page(browser_a.get(address), 400)
        assert "validation_error" in page
        assert "tenant/0123456789abcdef…" in page
        assert "~2F" in page
        assert 'href="/ui/runs"' in page


def test_a_run_id_pasted_with_its_slash_opens_that_runs_page(
    browser_a: httpx.Client, a_run: str
) -> None:
    moved = browser_a.get(f"/ui/runs/{a_run}")
    assert moved.status_code == 303
    assert moved.headers["location"] == f"/ui/runs/{project_id(a_run)}"
    page = browser_a.get(moved.headers["location"])
    assert page.status_code == 200
    assert a_run in page.text
    task = browser_a.get(f"/ui/evals/{a_run}/tasks/only")
    assert task.status_code == 303
    assert task.headers["location"] == f"/ui/evals/{project_id(a_run)}/tasks/only"
    # Not an eval run: the eval page says so, as a page.
    assert "not an eval run" in _page(browser_a.get(task.headers["location"]), 404)


# ── pages, methods, forms, query values ──────────────────────────────


def test_a_path_no_page_serves_gets_the_not_found_page(
    server: ServerHandle, browser_a: httpx.Client, a_run: str
) -> None:
    addresses = (
        "/ui/nope",
        "/ui/runs/not/a-run-id",
        f"/ui/runs/{project_id(a_run)}/extra",
        "/ui/suites/a/b",
        "/ui/evals/x/tasks/y/z",
    )
    for address in addresses:
        page = _page(browser_a.get(address), 404)
        assert "No such page." in page
        for link in ("/ui/runs", "/ui/compare", "/ui/suites"):
            assert f'href="{link}"' in page
    # Signed out, the same page, with nothing of a session on it.
    with _browser(server) as signed_out:
        answer = signed_out.get("/ui/nope")
        assert "No such page." in _page(answer, 404)
        assert "Sign out" not in answer.text


def test_a_suite_that_does_not_exist_points_to_the_suites(browser_a: httpx.Client) -> None:
    page = _page(browser_a.get(f"/ui/suites/{unique('no-such-suite')}"), 404)
    assert "No such suite." in page
    assert 'href="/ui/suites">suites page</a>' in page


def test_a_method_no_page_takes_gets_a_405_page_naming_the_ones_it_does(
    browser_a: httpx.Client,
) -> None:
    for method, address, allowed in (
        ("POST", "/ui/runs", "GET"),
        ("DELETE", "/ui/sign-in", "GET, POST"),
        ("PUT", "/ui/compare", "GET"),
    ):
        answer = browser_a.request(method, address)
        assert "wopeval.method_not_allowed" in _page(answer, 405)
        assert answer.headers["allow"] == allowed


def test_a_refused_form_gets_a_403_page_saying_to_reload(
    server: ServerHandle, browser_a: httpx.Client, a_run: str
) -> None:
    cancel = f"/ui/runs/{project_id(a_run)}/cancel"
    for refused in (
        browser_a.post(cancel, data={"csrf": "stale"}),
        browser_a.post(cancel, data={"csrf": "x"}, headers={"Origin": "https://elsewhere"}),
    ):
        page = _page(refused, 403)
        assert "forbidden" in page
        assert "reload the page and send its form again" in page


def test_a_bad_query_value_gets_a_400_page_saying_what_to_change(
    browser_a: httpx.Client,
) -> None:
    page = _page(browser_a.get("/ui/runs", params={"kind": "nope"}), 400)
    assert "kind must be one of" in page
    assert "Change the value the message names" in page
    page = _page(browser_a.get("/ui/runs", params={"from": "yesterday"}), 400)
    assert "2026-01-31T09:30" in page


def test_what_the_host_refuses_before_any_page_runs_is_a_page_too(
    server: ServerHandle, browser_a: httpx.Client
) -> None:
    too_large = "key=" + "a" * (server.settings.max_body_bytes + 1)
    refused = browser_a.post(
        "/ui/sign-in",
        content=too_large,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    page = _page(refused, 413)
    assert "payload_too_large" in page
    assert "send less" in page
    assert int(refused.headers["content-length"]) == len(refused.content)
    assert "NUL" in _page(browser_a.get("/ui/runs?kind=%00"), 400)
    assert "not_found" in _page(browser_a.get("/ui/static/no-such-file.css"), 404)
    other_major = browser_a.get("/ui/runs", headers={"OpenWOP-Version": "3.0"})
    assert "protocol_version_unsupported" in _page(other_major, 406)


# ── sessions ─────────────────────────────────────────────────────────


def test_a_missing_or_ended_session_lands_on_a_sign_in_page_naming_the_key_file(
    server: ServerHandle, a_run: str
) -> None:
    address = f"/ui/runs/{project_id(a_run)}"
    with _browser(server) as client:
        sent = client.get(address)
        assert sent.status_code == 303
        sign_in = client.get(sent.headers["location"])
        assert sign_in.status_code == 200
        assert sign_in.headers["content-type"].startswith("text/html")
        for named in ("&lt;data-dir&gt;/dev-api-key", ".wopeval-demo/dev-api-key"):
            assert named in sign_in.text
        assert "session-ended" not in sign_in.text
        csrf = _sign_in(client, server, TENANT_A)
        ended = dict(client.cookies)
        assert client.post("/ui/sign-out", data={"csrf": csrf}).status_code == 303
    with _browser(server) as replayed:
        replayed.cookies.update(ended)
        sent = replayed.get(address)
        assert sent.status_code == 303
        again = replayed.get(sent.headers["location"])
        assert again.status_code == 200
        assert "Your session has ended" in again.text
        assert ".wopeval-demo/dev-api-key" in again.text
        # Said once: the ended session's cookie is forgotten.
        assert 'wopeval_session=""' in again.headers["set-cookie"]


# ── the wire is unchanged ────────────────────────────────────────────


def test_the_wire_keeps_its_json_envelope(
    server: ServerHandle, http_b: httpx.Client, http_anonymous: httpx.Client, a_run: str
) -> None:
    _envelope(http_b.get(f"/runs/{project_id(a_run)}"), 403, "id_tenant_mismatch")
    _envelope(http_b.get(f"/runs/{project_id(f'{TENANT_B}/{uuid.uuid4().hex}')}"), 404, "not_found")
    _envelope(http_b.get(f"/runs/{uuid.uuid4().hex}"), 400, "validation_error")
    _envelope(http_b.get(f"/runs/{a_run}"), 404, "not_found")
    _envelope(http_b.get("/nope"), 404, "not_found")
    _envelope(http_b.get("/uix"), 404, "not_found")
    _envelope(http_b.delete("/runs"), 405, "wopeval.method_not_allowed")
    _envelope(http_anonymous.get(f"/runs/{project_id(a_run)}"), 401, "unauthenticated")
    _envelope(http_b.get("/runs?tag=%00"), 400, "validation_error")
    too_large = b"{" + b" " * server.settings.max_body_bytes + b"}"
    _envelope(http_b.post("/runs", content=too_large), 413, "payload_too_large")


# ── the compare page reflects its query ──────────────────────────────


@pytest.fixture(scope="module")
def eval_pair(server: ServerHandle) -> tuple[str, str]:
    client = server.client(TENANT_A)
    with server.http(TENANT_A) as http:
        base = run_eval(client, http, REGRESSION_BASE)
        candidate = run_eval(client, http, REGRESSION_CANDIDATE)
    return base.run_id, candidate.run_id


def _picked(page: str) -> dict[str, list[str]]:
    """Each picker's selected option values."""
    baseline, _, candidate = page.partition('id="pick-candidate"')
    return {"baseline": _SELECTED.findall(baseline), "candidate": _SELECTED.findall(candidate)}


def test_the_compare_pickers_show_the_runs_the_query_names(
    browser_a: httpx.Client, eval_pair: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    base, candidate = eval_pair
    # The pickers offer only the newest run: the baseline is older than that.
    monkeypatch.setattr(compare_page, "CHOICES", 1)
    for named in (base, project_id(base), project_id(base).replace("~2F", "~2f")):
        page = browser_a.get("/ui/compare", params={"baseline": named, "candidate": candidate})
        assert page.status_code == 200, page.text
        assert _picked(page.text) == {
            "baseline": [project_id(base)],
            "candidate": [project_id(candidate)],
        }
        assert 'id="run-verdict"' in page.text
    one = browser_a.get("/ui/compare", params={"baseline": base})
    assert one.status_code == 200, one.text
    assert _picked(one.text) == {"baseline": [project_id(base)], "candidate": []}
    assert 'id="run-verdict"' not in one.text
    assert _picked(browser_a.get("/ui/compare").text) == {"baseline": [], "candidate": []}


def test_a_compare_query_naming_a_run_that_is_not_ones_own_gets_the_run_page_refusal(
    browser_a: httpx.Client, browser_b: httpx.Client, eval_pair: tuple[str, str]
) -> None:
    base, candidate = eval_pair
    foreign = browser_b.get("/ui/compare", params={"baseline": base, "candidate": candidate})
    unknown = browser_b.get(
        "/ui/compare", params={"baseline": f"{TENANT_B}/{uuid.uuid4().hex}", "candidate": base}
    )
    _page(foreign, 404)
    assert foreign.text == unknown.text
    assert NO_SUCH_RUN in foreign.text
    own_unknown = browser_a.get(
        "/ui/compare", params={"baseline": base, "candidate": f"{TENANT_A}/{uuid.uuid4().hex}"}
    )
    assert NO_SUCH_RUN in _page(own_unknown, 404)
