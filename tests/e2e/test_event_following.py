"""Following a run while it is written: nothing is lost, hidden or repeated (events.md §Poll, §SSE).

The host here loads a project whose workflows log an exact number of events:
a gate node (a python agent that waits for the test's file) holds each run at
its start, then nodes whose agent makes ten live tool calls each (two commits
per call), and noop nodes (one commit each). The fan-out run is a long eval
run instead: a hundred tasks whose calls fixtures serve, one commit a trial,
its first task held at the same kind of gate. A follower attaches while the
run is held, the test opens the gate, and the rest of the log is written
while the follower reads it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from openwop_client import OpenwopClient
from openwop_client.types import CreateRunRequest
from openwop_client.wire_id import project_id

from _backends import Backend
from wopeval.settings import EvalFeatures

from ._server import ServerHandle, host_settings, running_host
from ._support import table_rows

MODULE = "wopeval_e2e_following"
# Events of one agent node: node.started, invocation started/decided/completed, node.completed.
AGENT_NODE_EVENTS = 5
RUN_EVENTS = 2  # run.started, run.completed
POLL_SIZES = (10, 1207, 5000)
FAN_OUT_SIZE = 10_000
FOLLOWERS = 200
SDK_FOLLOWERS = 4
PAGE_CAP = 1000
DEADLINE_SECONDS = 120.0

CODE = '''\
"""A gate agent that holds the run until a file exists, and an agent that makes N tool calls."""

import asyncio
from pathlib import Path


async def gate_agent(context):
    gate = Path(context.input["gate"])
    while not gate.exists():
        await asyncio.sleep(0.01)
    return "released"


async def calls_agent(context):
    if "gate" in context.input:
        await gate_agent(context)
    # All at once: each live call is durable before and after its tool runs, and calls in
    # flight together share the writer's commits, so a long log is written quickly.
    await asyncio.gather(
        *(context.call_tool("following:echo", {"index": index})
          for index in range(context.input["calls"]))
    )
    return "done"


async def echo(args):
    return args
'''

TOML = f"""\
workflows = ["workflows/*.json"]
suites = ["suites/*.json"]

[[agents]]
id = "following.gate"
lane = "python"
callable = "{MODULE}:gate_agent"

[[agents]]
id = "following.calls"
lane = "python"
callable = "{MODULE}:calls_agent"

[[tools]]
name = "following:echo"
kind = "python"
callable = "{MODULE}:echo"
"""


def workflow_id(total: int) -> str:
    return f"following-{total}"


def calls_per_node(total: int) -> int:
    """Tool calls of each calls node."""
    return 10


FAN_OUT_SUITE = "following.evals.fan-out"
FAN_OUT_GATE = "fan-out-gate"
FAN_OUT_TASKS = 100
# An eval run logs run.started, eval.started, eval.completed and run.completed, and per
# task invocation-started, decided, invocation-completed and eval.scored around 2 events
# a call: 4 + 100 x 4 + 2 x (98 x 48 + 2 x 47) = 10,000.
FAN_OUT_CALLS = [48] * 98 + [47] * 2


def fan_out_suite(gate: Path) -> dict[str, Any]:
    """The fan-out eval: its first task waits at `gate`; fixtures serve every call."""
    assert 4 + 4 * FAN_OUT_TASKS + 2 * sum(FAN_OUT_CALLS) == FAN_OUT_SIZE
    tasks = []
    for index, calls in enumerate(FAN_OUT_CALLS):
        task_input: dict[str, Any] = {"calls": calls}
        if index == 0:
            task_input["gate"] = str(gate)
        tasks.append(
            {
                "taskId": f"task-{index}",
                "input": task_input,
                "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "done"}},
                "fixtures": {
                    "toolResponses": [{"tool": "following:echo", "response": {"served": True}}]
                    * calls
                },
            }
        )
    return {
        "suiteId": FAN_OUT_SUITE,
        "version": "1.0.0",
        "modes": ["golden"],
        "targetAgentId": "following.calls",
        "tasks": tasks,
    }


def calls_node_events(total: int) -> int:
    return AGENT_NODE_EVENTS + 2 * calls_per_node(total)


def is_gated(total: int) -> bool:
    """Whether the run can start with the gate node.

    An agent node logs an odd number of events and a noop node two, so a run's
    total is odd exactly when it has an odd number of agent nodes: an even total
    needs room for the gate and at least one calls node.
    """
    return total % 2 == 1 or total >= RUN_EVENTS + AGENT_NODE_EVENTS + calls_node_events(total)


def nodes(total: int) -> list[dict[str, Any]]:
    """Nodes of a workflow whose run logs exactly `total` events, each node one commit."""
    node_events = calls_node_events(total)
    rest = total - RUN_EVENTS - (AGENT_NODE_EVENTS if is_gated(total) else 0)
    calls = rest // node_events
    if (rest - calls * node_events) % 2:
        calls -= 1
    noops = (rest - calls * node_events) // 2
    made: list[dict[str, Any]] = []
    if is_gated(total):
        made.append({"id": "gate", "type": "core.agent", "agentId": "following.gate"})
    made += [
        {
            "id": f"calls-{i}",
            "type": "core.agent",
            "agentId": "following.calls",
            "inputs": {"calls": calls_per_node(total)},
        }
        for i in range(calls)
    ]
    made += [{"id": f"noop-{i}", "type": "core.noop"} for i in range(noops)]
    return made


@pytest.fixture(scope="module")
def following_server(
    backend: Backend, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerHandle]:
    project = tmp_path_factory.mktemp(f"following-project-{backend.name}")
    (project / "workflows").mkdir()
    (project / f"{MODULE}.py").write_text(CODE)
    (project / "wopeval.toml").write_text(TOML)
    for total in POLL_SIZES:
        document = {"id": workflow_id(total), "nodes": nodes(total)}
        (project / "workflows" / f"{workflow_id(total)}.json").write_text(json.dumps(document))
    (project / "suites").mkdir()
    suite = fan_out_suite(project / FAN_OUT_GATE)
    (project / "suites" / "fan-out.json").write_text(json.dumps(suite))
    data_dir = tmp_path_factory.mktemp(f"following-host-{backend.name}")
    # One task at a time: the held first task holds the whole eval at its start.
    settings = host_settings(backend, data_dir, project=project, eval=EvalFeatures(concurrency=1))
    try:
        with running_host(settings, backend) as handle:
            yield handle
    finally:
        sys.path[:] = [p for p in sys.path if p != str(project.resolve())]
        sys.modules.pop(MODULE, None)


@dataclass
class HeldRun:
    run_id: str
    gate: Path

    def release(self) -> None:
        self.gate.touch()


def start_run(client: OpenwopClient, total: int, tmp_path: Path) -> HeldRun:
    gate = tmp_path / f"gate-{total}"
    if not is_gated(total):
        gate.touch()
    request = CreateRunRequest(workflowId=workflow_id(total), inputs={"gate": str(gate)})
    return HeldRun(client.runs_create(request).runId, gate)


# ── poll ─────────────────────────────────────────────────────────────


def poll_loop(client: OpenwopClient, held: HeldRun) -> tuple[list[Any], list[Any]]:
    """What `openwop-client` documents: feed `lastSequence` back, stop on `isTerminal`.

    Checks every response on the way: its events are exactly the log's events
    in (afterSequence, lastSequence], and only a response that reaches the
    terminal event says `isTerminal`. Opens the gate after the first response.
    """
    deadline = time.monotonic() + DEADLINE_SECONDS
    after = -1
    received: list[Any] = []
    pages: list[Any] = []
    while time.monotonic() < deadline:
        page = client.runs_poll_events(held.run_id, after_sequence=after, timeout_seconds=10)
        pages.append(page)
        assert [e.sequence for e in page.events] == list(range(after + 1, page.lastSequence + 1))
        received += page.events
        held.release()
        if page.isTerminal:
            assert received[-1].sequence == page.lastSequence
            assert received[-1].type == "run.completed"
            assert page.status == "completed"
            return received, pages
        assert page.status == "running"
        assert all(e.type != "run.completed" for e in page.events)
        after = page.lastSequence
    raise AssertionError(f"the poll loop did not reach the end within {DEADLINE_SECONDS}s")


@pytest.mark.parametrize("total", POLL_SIZES)
def test_the_sdk_poll_loop_receives_every_event_of_a_run_being_written(
    following_server: ServerHandle, tmp_path: Path, total: int
) -> None:
    client = following_server.client()
    held = start_run(client, total, tmp_path)
    received, pages = poll_loop(client, held)
    assert [e.sequence for e in received] == list(range(total))
    assert len({e.eventId for e in received}) == total
    stored = table_rows(following_server.database_url, "events", run_id=held.run_id)
    assert [json.loads(row["doc"])["eventId"] for row in stored] == [e.eventId for e in received]
    assert max(len(page.events) for page in pages) <= PAGE_CAP
    if is_gated(total):
        assert pages[0].isTerminal is False  # the loop followed the run while it was written


def test_a_log_longer_than_the_page_cap_is_paged_without_a_gap(
    following_server: ServerHandle, tmp_path: Path
) -> None:
    client = following_server.client()
    held = start_run(client, 1207, tmp_path)
    held.release()
    whole, _ = poll_loop(client, held)
    first = client.runs_poll_events(held.run_id, timeout_seconds=1)
    assert [e.sequence for e in first.events] == list(range(PAGE_CAP))
    assert (first.lastSequence, first.status, first.isTerminal) == (PAGE_CAP - 1, "running", False)
    rest = client.runs_poll_events(held.run_id, after_sequence=first.lastSequence)
    assert [e.eventId for e in first.events + rest.events] == [e.eventId for e in whole]
    assert (rest.lastSequence, rest.status, rest.isTerminal) == (1206, "completed", True)
    past = client.runs_poll_events(held.run_id, after_sequence=5000, timeout_seconds=1)
    assert (past.events, past.lastSequence, past.isTerminal) == ([], 1206, True)


# ── SSE ──────────────────────────────────────────────────────────────


def test_a_stream_resumed_past_the_end_of_an_active_run_closes_after_its_terminal_event(
    following_server: ServerHandle, tmp_path: Path
) -> None:
    client = following_server.client()
    held = start_run(client, 1207, tmp_path)
    body = b""
    with (
        following_server.http() as http,
        http.stream(
            "GET",
            f"/runs/{project_id(held.run_id)}/events",
            params={"streamMode": "debug"},
            headers={"Last-Event-ID": "100000"},
        ) as response,
    ):
        assert response.status_code == 200
        held.release()  # the stream was opened on the run while it was active
        deadline = time.monotonic() + DEADLINE_SECONDS
        for chunk in response.iter_bytes():  # keep-alives come at least every 15 s
            body += chunk
            assert time.monotonic() < deadline, "the stream did not close after the run ended"
    assert b"data:" not in body
    assert client.runs_get(held.run_id).status == "completed"


def sse_blocks(body: str) -> list[dict[str, str]]:
    frames = []
    for block in body.split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in block.splitlines() if line and not line.startswith(":")
        )
        if fields:
            frames.append(fields)
    return frames


@pytest.mark.parametrize("buffer_ms", [0, 200])
def test_buffered_streams_send_batches_named_by_their_highest_sequence(
    following_server: ServerHandle, tmp_path: Path, buffer_ms: int
) -> None:
    client = following_server.client()
    held = start_run(client, 1207, tmp_path)
    with (
        following_server.http() as http,
        http.stream(
            "GET",
            f"/runs/{project_id(held.run_id)}/events",
            params={"streamMode": "debug", "bufferMs": buffer_ms},
        ) as response,
    ):
        assert response.status_code == 200
        held.release()
        body = response.read().decode()
    frames = sse_blocks(body)
    assert {frame["event"] for frame in frames} == {"batch"}
    batches = [json.loads(frame["data"]) for frame in frames]
    for frame, batch in zip(frames, batches, strict=True):
        assert batch
        assert int(frame["id"]) == batch[-1]["sequence"]
    sequences = [event["sequence"] for batch in batches for event in batch]
    assert sequences == list(range(1207))
    assert batches[-1][-1]["type"] == "run.completed"
    assert len(batches) < 1207

    flattened = list(client.runs_events(held.run_id, stream_mode="debug", buffer_ms=buffer_ms))
    assert [e.sequence for e in flattened] == list(range(1207))
    resumed = client.runs_events(
        held.run_id, stream_mode="debug", buffer_ms=buffer_ms, last_event_id=frames[0]["id"]
    )
    assert [e.sequence for e in resumed] == list(range(int(frames[0]["id"]) + 1, 1207))


@pytest.mark.parametrize("buffer_ms", [-1, 5001, "soon"])
def test_a_buffer_outside_0_to_5000_ms_is_400(
    following_server: ServerHandle, tmp_path: Path, buffer_ms: object
) -> None:
    held = start_run(following_server.client(), 10, tmp_path)
    with following_server.http() as http:
        response = http.get(
            f"/runs/{project_id(held.run_id)}/events", params={"bufferMs": str(buffer_ms)}
        )
    assert response.status_code == 400
    assert response.json()["error"] == "validation_error"


# ── fan-out ──────────────────────────────────────────────────────────

KEEPALIVE = b": keep-alive\n\n"


@dataclass
class Followed:
    """What one follower received: a digest of its frames, keep-alive comments left out."""

    digest: Any = field(default_factory=hashlib.sha256)
    first_frame: asyncio.Event = field(default_factory=asyncio.Event)

    def take(self, frames: bytes) -> None:
        # A digest of the bytes keeps 200 followers of a 4 MB log cheap for the test itself.
        if KEEPALIVE in frames:
            frames = frames.replace(KEEPALIVE, b"")
        self.digest.update(frames)
        if frames:
            self.first_frame.set()


def expected_stream(rows: list[dict[str, Any]]) -> bytes:
    """The debug stream of a log: one frame per event, `id:` its sequence, in order."""
    return "".join(
        f"id: {row['sequence']}\nevent: {row['type']}\ndata: {row['doc']}\n\n" for row in rows
    ).encode()


async def follow(client: httpx.AsyncClient, run_id: str, followed: Followed) -> None:
    async with client.stream(
        "GET", f"/runs/{project_id(run_id)}/events", params={"streamMode": "debug"}
    ) as response:
        assert response.status_code == 200
        pending = b""
        async for chunk in response.aiter_bytes():
            complete, separator, pending = (pending + chunk).rpartition(b"\n\n")
            if separator:
                followed.take(complete + separator)
        assert not pending


def follow_with_sdk(server: ServerHandle, run_id: str, got: list[list[int]]) -> None:
    got.append([e.sequence for e in server.client().runs_events(run_id, stream_mode="debug")])


async def fan_out(server: ServerHandle, held: HeldRun) -> list[Followed]:
    followed = [Followed() for _ in range(FOLLOWERS - SDK_FOLLOWERS)]
    async with httpx.AsyncClient(
        base_url=server.base_url,
        headers={"Authorization": f"Bearer {server.key_a}", "OpenWOP-Version": "2.0"},
        timeout=httpx.Timeout(60.0),
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=0),
        trust_env=False,
    ) as client:
        streams = [asyncio.create_task(follow(client, held.run_id, one)) for one in followed]
        # Every follower has its first frame (run.started) before the run goes on.
        await asyncio.wait_for(
            asyncio.gather(*(one.first_frame.wait() for one in followed)), DEADLINE_SECONDS
        )
        held.release()
        await asyncio.wait_for(asyncio.gather(*streams), DEADLINE_SECONDS)
    return followed


def test_two_hundred_followers_each_receive_the_whole_log_of_a_long_eval_run(
    following_server: ServerHandle,
) -> None:
    request = CreateRunRequest(
        mode="eval", evalSuiteRef=f"{FAN_OUT_SUITE}@1.0.0", agentId="following.calls"
    )
    project = following_server.settings.project
    assert project is not None
    held = HeldRun(following_server.client().runs_create(request).runId, project / FAN_OUT_GATE)
    by_sdk: list[list[int]] = []
    sdk_threads = [
        threading.Thread(target=follow_with_sdk, args=(following_server, held.run_id, by_sdk))
        for _ in range(SDK_FOLLOWERS)
    ]
    for thread in sdk_threads:
        thread.start()
    followed = asyncio.run(fan_out(following_server, held))
    for thread in sdk_threads:
        thread.join(DEADLINE_SECONDS)

    stored = table_rows(following_server.database_url, "events", run_id=held.run_id)
    assert [row["sequence"] for row in stored] == list(range(FAN_OUT_SIZE))
    expected = expected_stream(stored)
    for one in followed:
        # Exactly the frames of sequences 0..last, in order, each document byte for byte.
        assert one.digest.hexdigest() == hashlib.sha256(expected).hexdigest()
    assert by_sdk == [list(range(FAN_OUT_SIZE))] * SDK_FOLLOWERS
