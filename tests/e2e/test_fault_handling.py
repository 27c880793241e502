"""What the error stack does with failures no route planned for (issue 10, item 5).

The host under test is the real app under uvicorn with two fault-injection
routes added: one raises an unexpected exception, one raises a framework
`HTTPException` of a chosen status, as Starlette and FastAPI do themselves.
"""

from __future__ import annotations

import http.client
import json
import logging
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from starlette.exceptions import HTTPException

from _backends import Backend
from wopeval.hosting.app import host_app
from wopeval.settings import Settings

from ._server import ServerHandle, host_settings
from ._support import PROTOCOL_VERSION, check_envelope


class InjectedFault(RuntimeError):
    pass


def _app_with_faults(settings: Settings) -> FastAPI:
    app = host_app(settings)

    @app.get("/runs/{runId}/injected-fault", include_in_schema=False)
    async def crash(runId: str) -> None:
        raise InjectedFault(f"injected while serving {runId}")

    @app.get("/injected-framework-error/{status}", include_in_schema=False)
    async def framework_error(status: int) -> None:
        raise HTTPException(status)

    return app


@pytest.fixture(scope="module")
def faulty_server(
    backend: Backend, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerHandle]:
    data_dir: Path = tmp_path_factory.mktemp(f"faulty-{backend.name}")
    handle = ServerHandle(
        host_settings(backend, data_dir), backend=backend.name, app_factory=_app_with_faults
    )
    handle.start()
    try:
        yield handle
    finally:
        handle.stop()


def _get(
    connection: http.client.HTTPConnection, path: str
) -> tuple[int, http.client.HTTPMessage, bytes]:
    connection.request("GET", path, headers={"OpenWOP-Version": "2"})
    response = connection.getresponse()
    return response.status, response.headers, response.read()


def test_an_unexpected_exception_is_a_logged_500_on_a_connection_that_stays_open(
    faulty_server: ServerHandle, caplog: pytest.LogCaptureFixture
) -> None:
    segment = f"tenant-a~2F{uuid.uuid4().hex}"
    connection = http.client.HTTPConnection("127.0.0.1", faulty_server.port, timeout=60)
    try:
        with caplog.at_level(logging.ERROR, logger="wopeval.api"):
            status, headers, body = _get(connection, f"/runs/{segment}/injected-fault")
        assert status == 500
        assert headers.get("OpenWOP-Version") == PROTOCOL_VERSION
        assert headers.get("Connection", "").lower() != "close"
        check_envelope(json.loads(body), 500, "internal_error")
        socket_before = connection.sock
        # The same connection serves the next request: the host did not hang up.
        status, _, body = _get(connection, "/.well-known/openwop")
        assert status == 200
        assert json.loads(body)["protocolVersions"] == [PROTOCOL_VERSION]
        assert connection.sock is socket_before
    finally:
        connection.close()
    logged = [record for record in caplog.records if record.name == "wopeval.api"]
    assert len(logged) == 1, [record.getMessage() for record in logged]
    assert logged[0].exc_info is not None
    assert isinstance(logged[0].exc_info[1], InjectedFault)
    assert segment in logged[0].getMessage()


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (400, "validation_error"),
        (401, "unauthenticated"),
        (403, "forbidden"),
        (404, "not_found"),
        (413, "payload_too_large"),
    ],
)
def test_a_framework_error_is_answered_with_its_registered_code(
    faulty_server: ServerHandle, status: int, code: str
) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", faulty_server.port, timeout=60)
    try:
        answered, headers, body = _get(connection, f"/injected-framework-error/{status}")
    finally:
        connection.close()
    assert answered == status, body
    assert headers.get("OpenWOP-Version") == PROTOCOL_VERSION
    check_envelope(json.loads(body), status, code)
    if status == 401:
        assert headers["WWW-Authenticate"].startswith("Bearer")
