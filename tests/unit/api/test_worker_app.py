"""A queue worker's app holds its agents' requests to the host's rules before any token
is resolved: the body limit, strict JSON, and the 500 envelope for a crash.

The worker serves the same per-invocation endpoints as the host (its MCP endpoint and
recording model proxy), so an agent on a worker must meet the same refusals as on the
host (`api/request_guard.py`); asked here through ASGI, on the app `create_worker_app`
builds, with no invocation granted (a request that passes the guards meets the token's
404).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager

import httpx
import pytest

from wopeval.api.app import create_worker_app
from wopeval.api.auth import Authenticator
from wopeval.api.deps import InvocationAccess
from wopeval.api.upstream_pools import UpstreamPools
from wopeval.engine.health import HealthReport
from wopeval.engine.recording.grants import (
    ANTHROPIC_PATH,
    MCP_PATH,
    OPENAI_PATH,
    InvocationGrants,
)
from wopeval.engine.recording.invocation import Invocation
from wopeval.engine.runlog.steps import StepNotLanded

LIMIT = 256
TOKEN = "t" * 43
ENDPOINTS = [
    f"{MCP_PATH}{TOKEN}",
    f"{OPENAI_PATH}{TOKEN}/v1/chat/completions",
    f"{OPENAI_PATH}{TOKEN}/v1/responses",
    f"{ANTHROPIC_PATH}{TOKEN}/v1/messages",
]
JSON = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


class _Failing(InvocationGrants[Invocation]):
    """Grants whose lookup fails as a bug would: the crash must not reach the server."""

    def resolve(self, token: str, tenant: str | None) -> Invocation | None:
        raise RuntimeError("a bug in the token's lookup")


class _Unreachable(InvocationGrants[Invocation]):
    """Grants whose lookup meets the database out of reach: a 503, not a crash."""

    def resolve(self, token: str, tenant: str | None) -> Invocation | None:
        raise StepNotLanded("the database is out of reach")


async def _report() -> HealthReport:
    raise AssertionError("not asked here")


@asynccontextmanager
async def _worker(grants: InvocationGrants[Invocation]) -> AsyncIterator[httpx.AsyncClient]:
    async with aclosing(UpstreamPools()) as upstreams:
        access = InvocationAccess(grants, Authenticator([]), upstreams)
        app, _ = create_worker_app(_report, access, max_body_bytes=LIMIT)
        # An exception out of the app would reach the server, which closes the connection.
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=True)
        async with httpx.AsyncClient(transport=transport, base_url="http://worker") as client:
            yield client


@pytest.mark.parametrize("path", ENDPOINTS)
async def test_a_body_over_the_limit_is_refused_before_the_token_is_looked_up(path: str) -> None:
    body = b'{"pad": "' + b"x" * LIMIT + b'"}'
    async with _worker(_Failing("http://worker")) as client:
        answer = await client.post(path, content=body, headers=JSON)
    assert answer.status_code == 413
    assert answer.json()["error"] == "payload_too_large"
    assert answer.json()["details"] == {"maxBodyBytes": LIMIT}
    assert answer.headers["connection"] == "close"


@pytest.mark.parametrize("path", ENDPOINTS)
@pytest.mark.parametrize("body", [b'{"n": NaN}', b'{"n": 1e400}', b'{"s": "\\ud800"}'])
async def test_a_body_that_is_not_strict_json_is_refused_before_any_parser(
    path: str, body: bytes
) -> None:
    async with _worker(_Failing("http://worker")) as client:
        answer = await client.post(path, content=body, headers=JSON)
    assert answer.status_code == 400
    assert answer.json()["error"] == "validation_error"


@pytest.mark.parametrize("path", ENDPOINTS)
async def test_a_request_within_the_rules_reaches_the_token_check(path: str) -> None:
    async with _worker(InvocationGrants("http://worker")) as client:
        answer = await client.post(path, json={"model": "m"}, headers=JSON)
    assert answer.status_code == 404
    assert answer.json()["error"] == "not_found"


@pytest.mark.parametrize("path", ENDPOINTS)
async def test_a_crash_is_answered_with_the_500_envelope(path: str) -> None:
    async with _worker(_Failing("http://worker")) as client:
        answer = await client.post(path, json={"model": "m"}, headers=JSON)
    assert answer.status_code == 500
    assert answer.json()["error"] == "internal_error"


@pytest.mark.parametrize("path", ENDPOINTS)
@pytest.mark.parametrize(
    ("grants", "status"), [(_Failing, 500), (_Unreachable, 503)], ids=["crash", "unreachable"]
)
async def test_the_log_of_a_failed_answer_never_holds_the_token(
    path: str,
    grants: type[InvocationGrants[Invocation]],
    status: int,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """CrashGuard logs the path it failed to answer (its traceback, or the database out of
    reach): an invocation's token in that path is a capability, and is masked there too."""
    with caplog.at_level(logging.WARNING, logger="wopeval.api"):
        async with _worker(grants("http://worker")) as client:
            answer = await client.post(path, json={"model": "m"}, headers=JSON)
    assert answer.status_code == status
    logged = [record.getMessage() for record in caplog.records if record.name == "wopeval.api"]
    assert logged, "the failure was not logged"
    assert all(TOKEN not in line for line in logged), logged
