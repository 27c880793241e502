"""Dashboard sessions per tenant and the sign-in throttle (docs/dashboard.md, "Signing in").

One host per backend with small caps, and a clock the tests move: a session's
expiry and a throttle's window are crossed by moving the clock, never by
waiting. Each test starts a window and a lifetime after the one before, so it
meets no session and no count of another test.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from _backends import Backend
from wopeval.hosting.app import host_app
from wopeval.settings import DashboardSettings, Settings

from ._server import TENANT_A, TENANT_B, ServerHandle, host_settings

SESSIONS_PER_TENANT = 3
FAILURES_PER_ADDRESS = 5
SIGN_INS_PER_TENANT = 8
WINDOW_SECONDS = 60.0
SESSION_SECONDS = 600.0
LIMITS = DashboardSettings(
    session_seconds=SESSION_SECONDS,
    sessions_per_tenant=SESSIONS_PER_TENANT,
    sign_in_window_seconds=WINDOW_SECONDS,
    failed_sign_ins_per_address=FAILURES_PER_ADDRESS,
    sign_ins_per_tenant=SIGN_INS_PER_TENANT,
)
WRONG_KEYS = 300
"""As many as the issue's flood (300 wrong keys at 96 a second)."""
_RETRY_TEXT = re.compile(r"Try again in (\d+) seconds")


class MovedClock:
    """A monotonic clock that moves only when a test moves it."""

    def __init__(self) -> None:
        self._now = 1_000.0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds


@pytest.fixture(scope="module")
def clock() -> MovedClock:
    return MovedClock()


@pytest.fixture(scope="module")
def host(
    backend: Backend, tmp_path_factory: pytest.TempPathFactory, clock: MovedClock
) -> Iterator[ServerHandle]:
    data_dir: Path = tmp_path_factory.mktemp(f"dashboard-sessions-{backend.name}")

    def app_with_the_tests_clock(settings: Settings) -> FastAPI:
        return host_app(settings, dashboard_clock=clock)

    handle = ServerHandle(
        host_settings(backend, data_dir, dashboard=LIMITS),
        backend=backend.name,
        app_factory=app_with_the_tests_clock,
    )
    handle.start()
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture(autouse=True)
def fresh_window(clock: MovedClock) -> None:
    """Past every earlier test's sessions and sign-in counts."""
    clock.advance(max(WINDOW_SECONDS, SESSION_SECONDS) + 1)


def _browser(host: ServerHandle, address: str | None = None) -> httpx.Client:
    """A cookie-keeping client, not following redirects; `address` is the one a proxy on
    loopback would name in X-Forwarded-For."""
    headers = {"X-Forwarded-For": address} if address else None
    return httpx.Client(base_url=host.base_url, headers=headers, trust_env=False, timeout=60.0)


def _sign_in(client: httpx.Client, key: str) -> httpx.Response:
    return client.post("/ui/sign-in", data={"key": key, "next": "/ui/runs"})


def _signed_in(host: ServerHandle, tenant: str) -> httpx.Client:
    """A new browser, signed in as `tenant`; close it after use."""
    client = _browser(host)
    response = _sign_in(client, host.keys[tenant])
    assert response.status_code == 303, response.text
    return client


def _is_signed_in(client: httpx.Client) -> bool:
    page = client.get("/ui/runs")
    assert page.status_code in (200, 303), page.text
    if page.status_code == 303:
        assert page.headers["location"].startswith("/ui/sign-in")
    return page.status_code == 200


def _assert_throttled(response: httpx.Response) -> int:
    """A 429 sign-in page with `Retry-After` (its wait, returned) and no cookie."""
    assert response.status_code == 429, response.text
    wait = int(response.headers["retry-after"])
    assert 1 <= wait <= math.ceil(WINDOW_SECONDS)
    assert "set-cookie" not in response.headers
    assert response.headers["content-type"].startswith("text/html")
    said = _RETRY_TEXT.search(response.text)
    assert said is not None, response.text
    assert int(said.group(1)) == wait
    return wait


def test_one_tenants_sign_ins_end_only_its_own_oldest_sessions(host: ServerHandle) -> None:
    with ExitStack() as browsers:

        def signed_in(tenant: str) -> httpx.Client:
            client = _signed_in(host, tenant)
            browsers.callback(client.close)
            return client

        a = signed_in(TENANT_A)
        b_sessions = [signed_in(TENANT_B) for _ in range(SESSIONS_PER_TENANT + 4)]
        # Tenant B's flood ended B's own oldest sessions and none of A's.
        assert _is_signed_in(a)
        assert [_is_signed_in(b) for b in b_sessions] == [False] * 4 + [True] * 3
        # A tenant at its cap ends its own oldest on its next sign-in.
        more_a = [signed_in(TENANT_A) for _ in range(SESSIONS_PER_TENANT)]
        assert not _is_signed_in(a)
        assert all(_is_signed_in(client) for client in more_a)
        assert all(_is_signed_in(b) for b in b_sessions[-SESSIONS_PER_TENANT:])


def test_a_session_ends_at_its_lifetime(host: ServerHandle, clock: MovedClock) -> None:
    browser = _signed_in(host, TENANT_A)
    try:
        cookie = dict(browser.cookies)
        clock.advance(SESSION_SECONDS - 1)
        assert _is_signed_in(browser)
        clock.advance(1)
        assert not _is_signed_in(browser)
        # The sign-in page it lands on says the session has ended.
        landing = browser.get("/ui/sign-in", params={"next": "/ui/runs"})
        assert "Your session has ended" in landing.text
    finally:
        browser.close()
    with _browser(host) as replayed:
        replayed.cookies.update(cookie)
        assert not _is_signed_in(replayed)


def test_wrong_keys_from_one_address_are_throttled_there_only(
    host: ServerHandle, clock: MovedClock
) -> None:
    with _browser(host, "198.51.100.7") as flooding:
        answers = [_sign_in(flooding, f"wop_wrong_{n}") for n in range(WRONG_KEYS)]
        statuses = [answer.status_code for answer in answers]
        assert statuses == [401] * FAILURES_PER_ADDRESS + [429] * (
            WRONG_KEYS - FAILURES_PER_ADDRESS
        )
        waits = {_assert_throttled(answer) for answer in answers[FAILURES_PER_ADDRESS:]}
        assert waits == {math.ceil(WINDOW_SECONDS)}
        # The right key is not even checked from there, until the window has passed.
        _assert_throttled(_sign_in(flooding, host.key_a))
        # Another address signs in as usual.
        with _browser(host, "198.51.100.8") as elsewhere:
            assert _sign_in(elsewhere, host.key_a).status_code == 303
        clock.advance(WINDOW_SECONDS - 1)
        assert _assert_throttled(_sign_in(flooding, host.key_a)) == 1
        clock.advance(1)
        assert _sign_in(flooding, host.key_a).status_code == 303
        assert _is_signed_in(flooding)


def test_a_tenants_sign_ins_are_throttled_whatever_the_address(
    host: ServerHandle, clock: MovedClock
) -> None:
    for n in range(SIGN_INS_PER_TENANT):
        with _browser(host, f"203.0.113.{n}") as browser:
            assert _sign_in(browser, host.key_a).status_code == 303
        clock.advance(1)
    with _browser(host, "203.0.113.200") as late:
        wait = _assert_throttled(_sign_in(late, host.key_a))
        assert wait == math.ceil(WINDOW_SECONDS) - SIGN_INS_PER_TENANT
        # Tenant B is not held back by A's sign-ins.
        assert _sign_in(late, host.key_b).status_code == 303
        assert _is_signed_in(late)
        clock.advance(wait)
        assert _sign_in(late, host.key_a).status_code == 303
