"""Slow SSE followers cost the host a bounded amount, and lose nothing (events.md §SSE frames).

A follower whose reader stops taking frames while the run is written falls out of the
run's shared window and is cut: its stream ends after whole frames, without the terminal
event, and the client resumes with `Last-Event-ID` from the last frame it has. A stream
catching up under `bufferMs` gets its backlog in bounded batches, not one batch of it all.

The host here runs a workflow whose one agent, held at a gate until the test opens it, makes
CALLS tool calls with PAD characters of arguments each (two events a call of some 4 KB), and
its streams share tails with a window of WINDOW events (the default window is 4,000: the
test's run would have to be that long to leave it).
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from openwop_client.wire_id import project_id

from _backends import Backend
from wopeval.engine.live.tail import DELIVERY_CHARS, Tails

from ._server import ServerHandle, host_settings, running_host

MODULE = "wopeval_e2e_slow_followers"
WINDOW = 16
CALLS = 200
PAD = 4000
# run.started, node.started, invocation started/decided/completed, two a call, node.completed,
# run.completed.
EVENTS = 7 + 2 * CALLS
RECEIVE_BUFFER = 4096
"""The stalled reader's socket buffer: small, so the host's side fills and its stream waits."""
TIMEOUT_SECONDS = 60.0

CODE = '''\
"""An agent that waits for a file, then makes N tool calls with padded arguments."""

import asyncio
from pathlib import Path


async def calls_agent(context):
    gate = Path(context.input["gate"])
    while not gate.exists():
        await asyncio.sleep(0.01)
    pad = "x" * context.input["pad"]
    await asyncio.gather(
        *(context.call_tool("slow:echo", {"index": index, "pad": pad})
          for index in range(context.input["calls"]))
    )
    return "done"


async def echo(args):
    return args
'''

TOML = f"""\
workflows = ["workflows/*.json"]

[[agents]]
id = "slow.calls"
lane = "python"
callable = "{MODULE}:calls_agent"

[[tools]]
name = "slow:echo"
kind = "python"
callable = "{MODULE}:echo"
"""


@pytest.fixture(scope="module")
def slow_server(
    backend: Backend, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerHandle]:
    project = tmp_path_factory.mktemp(f"slow-project-{backend.name}")
    (project / "workflows").mkdir()
    (project / f"{MODULE}.py").write_text(CODE)
    (project / "wopeval.toml").write_text(TOML)
    workflow = {
        "id": "bulky",
        "nodes": [{"id": "calls", "type": "core.agent", "agentId": "slow.calls"}],
    }
    (project / "workflows" / "bulky.json").write_text(json.dumps(workflow))
    settings = host_settings(
        backend, tmp_path_factory.mktemp(f"slow-host-{backend.name}"), project=project
    )
    try:
        with running_host(settings, backend) as handle:
            host = handle.host
            host.tails = Tails(host.store, host.engine.notifier, window=WINDOW)
            yield handle
    finally:
        sys.path[:] = [p for p in sys.path if p != str(project.resolve())]
        sys.modules.pop(MODULE, None)


def start_held_run(http: httpx.Client, gate: Path) -> str:
    inputs = {"gate": str(gate), "calls": CALLS, "pad": PAD}
    created = http.post("/runs", json={"workflowId": "bulky", "inputs": inputs})
    assert created.status_code == 201, created.text
    run_id: str = created.json()["runId"]
    return run_id


def wait_until_terminal(http: httpx.Client, run_id: str) -> None:
    """Long-polls the log's end until the run's terminal event is in it."""
    after = -1
    while True:
        page = http.get(
            f"/runs/{project_id(run_id)}/events/poll",
            params={"afterSequence": after, "timeout": 30},
        ).json()
        if page["isTerminal"]:
            assert page["status"] == "completed"
            return
        after = page["lastSequence"]


def frames(body: str) -> list[dict[str, str]]:
    """The SSE frames of a stream's body, each as its fields; keep-alive comments left out."""
    parsed = []
    for block in body.split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in block.split("\n") if line and not line.startswith(":")
        )
        if fields:
            parsed.append(fields)
    return parsed


def stream_path(run_id: str, query: str) -> str:
    return f"/runs/{project_id(run_id)}/events?{query}"


def test_a_follower_that_stops_reading_is_cut_and_its_resume_yields_every_event_once(
    slow_server: ServerHandle, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    with slow_server.http() as http:
        run_id = start_held_run(http, gate)
        with socket.socket() as stalled:
            stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
            stalled.settimeout(TIMEOUT_SECONDS)
            stalled.connect(("127.0.0.1", slow_server.port))
            request = (
                f"GET {stream_path(run_id, 'streamMode=debug')} HTTP/1.0\r\n"
                f"Host: 127.0.0.1\r\nAccept: text/event-stream\r\nOpenWOP-Version: 2.0\r\n"
                f"Authorization: Bearer {slow_server.key_a}\r\n\r\n"
            )
            stalled.sendall(request.encode())
            received = b""
            while b"\n\n" not in received.partition(b"\r\n\r\n")[2]:
                received += stalled.recv(65536)  # the head and the first frame: it is attached
            # It reads nothing more while the whole run is written.
            gate.touch()
            wait_until_terminal(http, run_id)
            while chunk := stalled.recv(65536):
                received += chunk
        head, _, body = received.decode().partition("\r\n\r\n")
        assert head.startswith("HTTP/1.1 200")
        first = frames(body)
        # Cut after whole frames, before the end: the stream ends on its last event's id.
        assert body.endswith("\n\n")
        assert first[-1]["event"] != "run.completed"
        last = int(first[-1]["id"])
        assert [int(f["id"]) for f in first] == list(range(last + 1))

        resumed = http.get(
            stream_path(run_id, "streamMode=debug"),
            headers={"Last-Event-ID": str(last)},
            timeout=TIMEOUT_SECONDS,
        )
        rest = frames(resumed.text)
    assert [int(f["id"]) for f in first + rest] == list(range(EVENTS))
    assert [json.loads(f["data"])["sequence"] for f in first + rest] == list(range(EVENTS))
    assert rest[-1]["event"] == "run.completed"


def test_a_stream_catching_up_under_buffer_ms_gets_bounded_batches(
    slow_server: ServerHandle, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    gate.touch()
    with slow_server.http() as http:
        run_id = start_held_run(http, gate)
        wait_until_terminal(http, run_id)
        # The whole log is at hand at once, well within the 5 s of buffer time.
        answer = http.get(stream_path(run_id, "streamMode=debug&bufferMs=5000"))
    batches: list[list[Any]] = []
    for frame in frames(answer.text):
        assert frame["event"] == "batch"
        batches.append(json.loads(frame["data"]))
        assert int(frame["id"]) == batches[-1][-1]["sequence"]
    assert [e["sequence"] for batch in batches for e in batch] == list(range(EVENTS))
    largest = max(len(json.dumps(e)) for batch in batches for e in batch)
    assert len(batches) > 1
    for frame in frames(answer.text):
        # A batch is flushed once it holds DELIVERY_CHARS of documents: at most one event more.
        assert len(frame["data"]) <= DELIVERY_CHARS + 2 * largest
