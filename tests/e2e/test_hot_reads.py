"""A run's read is answered below the router (api/hot_reads.py); a refusal by the route.

The host under test has its routes' credential dependency replaced by one that refuses
every GET, so a routed read answers 403. A read of the caller's own run still answers its
snapshot (no route was involved); a read that would be refused (no key, another tenant's
run, no such run) reaches the route and gets the route's answer.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI, Request

from _backends import Backend
from wopeval.api.deps import get_principal
from wopeval.hosting.app import host_app
from wopeval.hosting.host import Host
from wopeval.settings import Settings
from wopeval.wire import errors
from wopeval.wire.principal import Principal

from ._server import TENANT_A, TENANT_B, ServerHandle, host_settings
from ._support import NOOP_WORKFLOW, RUN_DEADLINE_SECONDS, check_envelope

ROUTE_REFUSAL = "a routed read"


async def _refuse_routed_reads(request: Request) -> Principal:
    if request.method == "GET":
        raise errors.Forbidden(ROUTE_REFUSAL)
    host: Host = request.app.state.host
    return host.auth.authenticate(request.headers.get("authorization"))


def _app_refusing_routed_reads(settings: Settings) -> FastAPI:
    app = host_app(settings)
    app.dependency_overrides[get_principal] = _refuse_routed_reads
    return app


@pytest.fixture(scope="module")
def host(backend: Backend, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerHandle]:
    data_dir: Path = tmp_path_factory.mktemp(f"hot-reads-{backend.name}")
    handle = ServerHandle(
        host_settings(backend, data_dir),
        backend=backend.name,
        app_factory=_app_refusing_routed_reads,
    )
    handle.start()
    try:
        yield handle
    finally:
        handle.stop()


def test_a_run_is_read_without_the_router_and_a_refusal_comes_from_it(
    host: ServerHandle,
) -> None:
    with host.http(TENANT_A) as http_a, host.http(TENANT_B) as http_b:
        created = http_a.post("/runs", json={"workflowId": NOOP_WORKFLOW, "inputs": {}})
        assert created.status_code == 201, created.text
        run_id = created.json()["runId"]
        segment = run_id.replace("/", "~2F")
        # Only the hot path can answer a GET here: the routed one is refused.
        assert http_a.get("/runs?limit=5").json()["message"] == ROUTE_REFUSAL
        deadline = time.monotonic() + RUN_DEADLINE_SECONDS
        while True:
            read = http_a.get(f"/runs/{segment}")
            assert read.status_code == 200, read.text
            snapshot = read.json()
            if snapshot["status"] == "completed" or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert snapshot["runId"] == run_id
        assert snapshot["status"] == "completed"
        assert snapshot["workflowId"] == NOOP_WORKFLOW
        assert read.headers["content-type"] == "application/json"
        assert read.headers["OpenWOP-Version"]
        refusals = [
            http_b.get(f"/runs/{segment}"),
            http_a.get(f"/runs/{TENANT_A}~2F{uuid.uuid4().hex}"),
        ]
        with host.http(None) as anonymous:
            refusals.append(anonymous.get(f"/runs/{segment}"))
    for refused in refusals:
        assert refused.status_code == 403
        check_envelope(refused.json(), 403, "forbidden")
        assert refused.json()["message"] == ROUTE_REFUSAL
