"""A body over the limit is 413 `payload_too_large`, decided before it is read whole or parsed,
and before the credential is looked at (issue 10, item 5)."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from wopeval.wire import limits

from ._server import ServerHandle
from ._support import PROTOCOL_VERSION, check_envelope, store_unchanged

LIMIT = limits.DEFAULT_MAX_BODY_BYTES
CHUNK = b" " * 65536


@contextmanager
def _connection(server: ServerHandle) -> Iterator[http.client.HTTPConnection]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        yield connection
    finally:
        connection.close()


def _start(
    connection: http.client.HTTPConnection, method: str, path: str, headers: dict[str, str]
) -> None:
    connection.putrequest(method, path)
    for name, value in {"OpenWOP-Version": "2", **headers}.items():
        connection.putheader(name, value)
    connection.endheaders()


def _assert_too_large(response: http.client.HTTPResponse) -> None:
    assert response.status == 413, response.read()
    assert response.getheader("OpenWOP-Version") == PROTOCOL_VERSION
    # The unread rest of the body cannot be told from a next request: the host hangs up.
    assert response.getheader("Connection") == "close"
    body = check_envelope(json.loads(response.read()), 413, "payload_too_large")
    assert body["details"] == {"maxBodyBytes": LIMIT}


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/runs"), ("PUT", "/host/wopeval/suites"), ("POST", "/runs/x~2Fy/cancel")],
)
def test_an_unauthenticated_48_mb_body_is_refused_from_its_content_length(
    server: ServerHandle, http_a: httpx.Client, method: str, path: str
) -> None:
    with store_unchanged(server.database_url), _connection(server) as connection:
        # Only the headers are sent: the answer cannot have waited for the body.
        _start(
            connection,
            method,
            path,
            {"Content-Type": "application/json", "Content-Length": str(48 * 1024 * 1024)},
        )
        _assert_too_large(connection.getresponse())
    assert http_a.get("/runs", params={"limit": 1}).status_code == 200


def test_a_streamed_body_is_refused_as_soon_as_it_passes_the_limit(
    server: ServerHandle, http_a: httpx.Client
) -> None:
    with store_unchanged(server.database_url), _connection(server) as connection:
        headers = {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}
        _start(connection, "POST", "/runs", {**headers, "Authorization": f"Bearer {server.key_a}"})
        sent = 0
        while sent <= LIMIT:
            connection.send(b"%x\r\n%s\r\n" % (len(CHUNK), CHUNK))
            sent += len(CHUNK)
        # The body is never ended: only a count kept while receiving can answer now.
        _assert_too_large(connection.getresponse())
    assert http_a.get("/runs", params={"limit": 1}).status_code == 200


def test_a_body_of_exactly_the_limit_is_accepted(http_a: httpx.Client) -> None:
    body = json.dumps({"workflowId": "conformance-noop", "tags": ["at-the-limit"]}).encode()
    padded = body + b" " * (LIMIT - len(body))
    assert len(padded) == LIMIT
    response = http_a.post("/runs", content=padded, headers={"Content-Type": "application/json"})
    assert response.status_code == 201, response.text
