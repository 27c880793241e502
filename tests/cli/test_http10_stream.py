"""A stream to an HTTP/1.0 client ends with the connection, never in chunks (RFC 9112 §7.1).

An HTTP/1.0 client knows no chunked framing, and nginx speaks HTTP/1.0 to the server it
proxies unless configured otherwise. uvicorn picks its httptools protocol whenever httptools
is importable (`uvicorn[standard]` brings it, as do many agent stacks beside the host), and
that protocol frames such a stream as chunked anyway: the client then reads the chunk sizes
as part of the event stream. The dev extra installs httptools, so the `served` host here is
one with it importable, as such a host would be.
"""

from __future__ import annotations

import json
import socket
import time
from urllib.parse import urlsplit

from _processes import START_DEADLINE_SECONDS

from ._support import ServedHost

STREAM_DEADLINE_SECONDS = 30.0


def test_a_run_s_event_stream_to_an_http_1_0_client_is_delimited_by_the_close(
    served: ServedHost,
) -> None:
    with served.http() as http:
        created = http.post("/runs", json={"workflowId": "cli-fixed"})
        assert created.status_code == 201, created.text
        run_id = created.json()["runId"]
        deadline = time.monotonic() + START_DEADLINE_SECONDS
        while http.get(f"/runs/{run_id.replace('/', '~2F')}").json()["status"] != "completed":
            assert time.monotonic() < deadline, f"run {run_id} never completed"
            time.sleep(0.05)

    head, body = _get_as_http_1_0(
        served, f"/runs/{run_id.replace('/', '~2F')}/events?streamMode=debug"
    )

    status, *header_lines = head.decode("latin-1").split("\r\n")
    assert status.split(" ", 2)[1] == "200", head
    headers = {
        name.lower(): value.strip()
        for name, _, value in (line.partition(":") for line in header_lines)
    }
    assert headers["content-type"].startswith("text/event-stream")
    assert "transfer-encoding" not in headers, headers
    frames = [frame for frame in body.decode().split("\n\n") if frame.strip()]
    events = [
        json.loads(line.removeprefix("data:"))
        for frame in frames
        for line in frame.splitlines()
        if line.startswith("data:")
    ]
    assert len(events) == len(frames), body[:200]
    assert [event["sequence"] for event in events] == list(range(len(events)))
    assert events[-1]["type"] == "run.completed"


def _get_as_http_1_0(served: ServedHost, path: str) -> tuple[bytes, bytes]:
    """GET `path` as an HTTP/1.0 client: the response's head, and its body read to the close."""
    address = urlsplit(served.url)
    request = (
        f"GET {path} HTTP/1.0\r\nHost: {address.netloc}\r\nAccept: text/event-stream\r\n"
        f"Authorization: Bearer {served.api_key}\r\nOpenWOP-Version: 2.0\r\n\r\n"
    )
    received = bytearray()
    with socket.create_connection(
        (address.hostname, address.port), timeout=STREAM_DEADLINE_SECONDS
    ) as connection:
        connection.sendall(request.encode())
        while chunk := connection.recv(65536):
            received += chunk
    head, separator, body = bytes(received).partition(b"\r\n\r\n")
    assert separator, received[:200]
    return head, body
