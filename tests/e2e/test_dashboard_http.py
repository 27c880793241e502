"""The dashboard as an HTTP client sees it: sessions, CSRF, refusals, limits, headers.

The browser tier (tests/browser/test_dashboard.py) drives the pages; here the
same host answers the requests a browser would never send on its own: forged
forms, foreign origins, oversized bodies, bad query values, a stream asked for
runs that are not the caller's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from openwop_client.wire_id import project_id

from wopeval.api.ui._security import CONTENT_SECURITY_POLICY

from ._server import TENANT_A, TENANT_B, ServerHandle
from ._support import create_counter_run, unique, wait_terminal

_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def _browser(server: ServerHandle) -> httpx.Client:
    """A cookie-keeping client that does not follow redirects (they are what is tested)."""
    return httpx.Client(base_url=server.base_url, trust_env=False, timeout=60.0)


def _sign_in(client: httpx.Client, server: ServerHandle, tenant: str) -> str:
    """Sign in as `tenant`; returns the session's CSRF token, read from a page."""
    response = client.post("/ui/sign-in", data={"key": server.keys[tenant], "next": "/ui/runs"})
    assert response.status_code == 303, response.text
    page = client.get("/ui/runs")
    assert page.status_code == 200, page.text
    found = _CSRF.search(page.text)
    assert found is not None
    return found.group(1)


@pytest.fixture
def signed_in(server: ServerHandle) -> Iterator[tuple[httpx.Client, str]]:
    with _browser(server) as client:
        yield client, _sign_in(client, server, TENANT_A)


@pytest.fixture
def finished_run(server: ServerHandle) -> str:
    client = server.client(TENANT_A)
    run_id = create_counter_run(client, unique("dashboard"))
    wait_terminal(client, run_id)
    return run_id


def test_the_dashboard_stays_out_of_the_openapi_document(http_a: httpx.Client) -> None:
    paths = http_a.get("/openapi.json").json()["paths"]
    assert paths
    assert not [path for path in paths if path.startswith("/ui")]


def test_sign_in_sets_a_strict_http_only_cookie_that_is_secure_behind_tls(
    server: ServerHandle,
) -> None:
    with _browser(server) as client:
        plain = client.post("/ui/sign-in", data={"key": server.key_a})
        assert plain.status_code == 303
        assert plain.headers["location"] == "/ui/runs"
        cookie = plain.headers["set-cookie"]
        assert "HttpOnly" in cookie
        assert "SameSite=strict" in cookie
        assert "Path=/ui" in cookie
        assert "Secure" not in cookie
        assert server.key_a not in cookie
        # Behind a TLS proxy on loopback (X-Forwarded-Proto), the cookie is Secure.
        tls = client.post(
            "/ui/sign-in", data={"key": server.key_a}, headers={"X-Forwarded-Proto": "https"}
        )
        assert tls.status_code == 303
        assert "Secure" in tls.headers["set-cookie"]


def test_a_wrong_key_gets_no_session(server: ServerHandle) -> None:
    with _browser(server) as client:
        refused = client.post("/ui/sign-in", data={"key": "wop_wrong"})
        assert refused.status_code == 401
        assert "set-cookie" not in refused.headers
        assert "not valid" in refused.text
        assert client.get("/ui/runs").status_code == 303


@pytest.mark.parametrize(
    ("given", "landing"),
    [
        ("/ui/suites", "/ui/suites"),
        ("//elsewhere.example/ui/", "/ui/runs"),
        ("https://elsewhere.example/ui/", "/ui/runs"),
        ("/ui/\\elsewhere.example", "/ui/runs"),
        ("/runs", "/ui/runs"),
    ],
)
def test_signing_in_returns_only_to_a_dashboard_page(
    server: ServerHandle, given: str, landing: str
) -> None:
    with _browser(server) as client:
        response = client.post("/ui/sign-in", data={"key": server.key_a, "next": given})
        assert response.status_code == 303
        assert response.headers["location"] == landing


def test_signed_out_requests_go_to_the_sign_in_page(
    server: ServerHandle, finished_run: str
) -> None:
    with _browser(server) as client:
        page = client.get("/ui/runs", params={"kind": "eval"})
        assert page.status_code == 303
        assert page.headers["location"] == "/ui/sign-in?next=%2Fui%2Fruns%3Fkind%3Deval"
        posted = client.post(f"/ui/runs/{project_id(finished_run)}/cancel", data={"csrf": "x"})
        assert posted.status_code == 303
        assert posted.headers["location"] == "/ui/sign-in"
        stream = client.get("/ui/live", params={"run": f"{project_id(finished_run)}:0"})
        assert stream.status_code == 303


def test_a_state_changing_form_needs_the_sessions_token_and_this_hosts_origin(
    server: ServerHandle, signed_in: tuple[httpx.Client, str], finished_run: str
) -> None:
    client, csrf = signed_in
    cancel = f"/ui/runs/{project_id(finished_run)}/cancel"
    assert client.post(cancel, data={"back": "run"}).status_code == 403
    assert client.post(cancel, data={"csrf": csrf + "x"}).status_code == 403
    foreign = client.post(cancel, data={"csrf": csrf}, headers={"Origin": "https://elsewhere"})
    assert foreign.status_code == 403
    cross_site = client.post(cancel, data={"csrf": csrf}, headers={"Sec-Fetch-Site": "cross-site"})
    assert cross_site.status_code == 403
    # With both, the cancel reaches the engine: this run has ended, so the wire's 409.
    accepted = client.post(cancel, data={"csrf": csrf}, headers={"Origin": server.base_url})
    assert accepted.status_code == 409
    assert "run_terminal" in accepted.text
    # Sign-out is a form too; without the token the session lives on.
    assert client.post("/ui/sign-out", data={"csrf": ""}).status_code == 403
    assert client.get("/ui/runs").status_code == 200


def test_sign_out_ends_the_session_for_good(
    server: ServerHandle, signed_in: tuple[httpx.Client, str]
) -> None:
    client, csrf = signed_in
    stolen = dict(client.cookies)
    out = client.post("/ui/sign-out", data={"csrf": csrf})
    assert out.status_code == 303
    assert out.headers["location"] == "/ui/sign-in"
    assert 'wopeval_session=""' in out.headers["set-cookie"]
    with _browser(server) as replayed:
        replayed.cookies.update(stolen)
        assert replayed.get("/ui/runs").status_code == 303


def test_forms_are_held_to_the_body_limit_and_must_be_urlencoded(
    server: ServerHandle, signed_in: tuple[httpx.Client, str]
) -> None:
    client, _ = signed_in
    too_large = "key=" + "a" * (server.settings.max_body_bytes + 1)
    refused = client.post(
        "/ui/sign-in",
        content=too_large,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert refused.status_code == 413
    as_json = client.post("/ui/sign-in", json={"key": server.key_a})
    assert as_json.status_code == 400
    assert "x-www-form-urlencoded" in as_json.text
    not_text = client.post(
        "/ui/sign-in",
        content=b"key=\xff\xfe",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert not_text.status_code == 400
    many = "&".join(f"f{i}=1" for i in range(100))
    crowded = client.post(
        "/ui/sign-in", content=many, headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert crowded.status_code == 400


@pytest.mark.parametrize(
    "path",
    [
        "/ui/runs?kind=nope",
        "/ui/runs?status=nope",
        "/ui/runs?from=yesterday",
        "/ui/runs?cursor=not-a-cursor",
        "/ui/runs/tenant-a~2F0123456789abcdef0123?events_after=abc",
        "/ui/runs/~zz",
        "/ui/evals/tenant-a~2F0123456789abcdef0123?sort=nope",
        "/ui/live?run=nothing",
        "/ui/live",
    ],
)
def test_bad_query_values_get_a_4xx_page_never_a_500(
    signed_in: tuple[httpx.Client, str], path: str
) -> None:
    client, _ = signed_in
    response = client.get(path)
    assert 400 <= response.status_code < 500, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("text/html")


def test_pages_and_static_files_carry_the_security_headers(
    signed_in: tuple[httpx.Client, str],
) -> None:
    client, _ = signed_in
    for path, media in (
        ("/ui/runs", "text/html"),
        ("/ui/static/ui.css", "text/css"),
        ("/ui/static/ui.js", "text/javascript"),
    ):
        response = client.get(path)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith(media)
        assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["x-frame-options"] == "DENY"
    assert client.get("/ui/runs").headers["cache-control"] == "no-store"


def test_the_live_stream_of_a_finished_run_says_what_changed_and_ends(
    signed_in: tuple[httpx.Client, str], finished_run: str
) -> None:
    client, _ = signed_in
    segment = project_id(finished_run)
    # A page rendered after the end: nothing is left to say but that it ended.
    caught_up = client.get("/ui/live", params={"run": f"{segment}:100000"})
    assert caught_up.status_code == 200
    assert caught_up.headers["content-type"].startswith("text/event-stream")
    assert caught_up.text == "event: ended\ndata: {}\n\n"
    # A page rendered before the end: the change, then the end.
    behind = client.get("/ui/live", params={"run": f"{segment}:-1"})
    frames = behind.text
    assert frames.startswith("event: changed\n")
    assert f'"runId":"{finished_run}"' in frames
    assert frames.endswith("event: ended\ndata: {}\n\n")


def test_the_live_stream_refuses_another_tenants_run_as_an_unknown_one(
    server: ServerHandle, finished_run: str
) -> None:
    with _browser(server) as client:
        _sign_in(client, server, TENANT_B)
        response = client.get("/ui/live", params={"run": f"{project_id(finished_run)}:-1"})
        assert response.status_code == 404
        unknown = client.get("/ui/live", params={"run": f"{TENANT_A}~2F{'0' * 32}:-1"})
        assert response.text == unknown.text
        too_many = {"run": [f"{project_id(finished_run)}:-1"] * 51}
        assert client.get("/ui/live", params=too_many).status_code == 400
