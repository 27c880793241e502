"""A run's reads are answered from what was kept until the run changes (engine/live/read_cache.py).

The host's store is watched for reads while a gated run is read over the wire: while it
waits, repeated reads (its snapshot, a poll of its events) answer the same bytes without
reading the store; once it is let go and ends, the next reads show it ended (the change
dropped what was kept) and their repeats again read nothing. An erasure rewrites the
stored events without a step: the next poll shows them scrubbed, whether the erasure was
asked for or the host's retention purge made it.
"""

from __future__ import annotations

import re
import time
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from _backends import Backend
from _statements import statements_matching

from ._gate import start_gated_run
from ._server import TENANT_B, ServerHandle, host_settings, running_host
from ._support import (
    COUNTER_WORKFLOW,
    NOOP_WORKFLOW,
    RUN_DEADLINE_SECONDS,
    counter_inputs,
    table_rows,
    unique,
)
from .evals._evals import set_completed_at

_RUNS_READ = re.compile(r"\s*SELECT\b.*\bFROM (runs|events)\b", re.DOTALL | re.IGNORECASE)


def _run_reads(server: ServerHandle) -> AbstractContextManager[list[str]]:
    """The statements that read the runs or events tables while the block runs."""
    return statements_matching(server.host.store.engine, _RUNS_READ)


def _read(http: httpx.Client, segment: str, view: str = "") -> httpx.Response:
    answer = http.get(f"/runs/{segment}{view}")
    assert answer.status_code == 200, answer.text
    return answer


POLL = "/events/poll?afterSequence=-1&timeout=1"
SCRUBBED_DEADLINE_SECONDS = 5.0
REPEATS = 6


def _repeated(
    server: ServerHandle, http: httpx.Client, path: str
) -> tuple[list[httpx.Response], list[int]]:
    """`REPEATS` reads of one path, and how many store reads each of them took.

    A read that raced a commit of what it shows keeps nothing (engine/live/read_cache.py), so
    the first one or two may read the store; the later ones must not."""
    answers, costs = [], []
    with _run_reads(server) as reads:
        for _ in range(REPEATS):
            before = len(reads)
            answer = http.get(path)
            assert answer.status_code == 200, answer.text
            answers.append(answer)
            costs.append(len(reads) - before)
    return answers, costs


def _until_ended(http: httpx.Client, segment: str, view: str = "") -> httpx.Response:
    """Reads until one shows the run ended: a read kept from before would never show it."""
    deadline = time.monotonic() + RUN_DEADLINE_SECONDS
    while True:
        answer = _read(http, segment, view)
        body = answer.json()
        if body.get("isTerminal") or body.get("status") == "completed":
            return answer
        assert time.monotonic() < deadline, "the reads never showed the run ended"
        time.sleep(0.02)


def test_repeated_reads_are_answered_from_what_was_kept_until_the_run_changes(
    project_server: ServerHandle, tmp_path: Path
) -> None:
    run = start_gated_run(project_server, tmp_path)
    segment = run.run_id.replace("/", "~2F")
    with project_server.http() as http, project_server.http(TENANT_B) as other:
        waiting, costs = _repeated(project_server, http, f"/runs/{segment}")
        assert costs[2:] == [0] * (REPEATS - 2)  # not one store read once kept
        assert waiting[0].json()["status"] == "running"
        assert {answer.content for answer in waiting} == {waiting[0].content}
        assert {answer.headers["content-type"] for answer in waiting} == {"application/json"}
        # Another tenant is refused as before: the kept answer is the caller's alone.
        assert other.get(f"/runs/{segment}").status_code == 403

        run.release()
        latest = _until_ended(http, segment)
        ended, costs = _repeated(project_server, http, f"/runs/{segment}")
        assert costs[2:] == [0] * (REPEATS - 2)
    assert latest.json()["status"] == "completed"
    assert "completedAt" in latest.json()
    assert {answer.content for answer in ended} == {latest.content}


def test_repeated_polls_are_answered_from_what_was_kept_until_the_run_changes(
    project_server: ServerHandle, tmp_path: Path
) -> None:
    run = start_gated_run(project_server, tmp_path)
    segment = run.run_id.replace("/", "~2F")
    with project_server.http() as http, project_server.http(TENANT_B) as other:
        waiting, costs = _repeated(project_server, http, f"/runs/{segment}{POLL}")
        assert costs[2:] == [0] * (REPEATS - 2)
        first = waiting[-1].json()
        assert first["events"]
        assert not first["isTerminal"]
        assert {answer.content for answer in waiting[2:]} == {waiting[-1].content}
        assert other.get(f"/runs/{segment}{POLL}").status_code == 403

        run.release()
        latest = _until_ended(http, segment, POLL)
        ended, costs = _repeated(project_server, http, f"/runs/{segment}{POLL}")
        assert costs[2:] == [0] * (REPEATS - 2)
    events = latest.json()["events"]
    assert len(events) > len(first["events"])  # the change dropped the kept page
    assert events[-1]["type"] == "run.completed"
    assert [event["sequence"] for event in events] == list(range(len(events)))
    assert {answer.content for answer in ended} == {latest.content}


def test_an_erasure_drops_the_kept_polls_of_the_runs_it_scrubbed(
    project_server: ServerHandle,
) -> None:
    inputs = {"customer": f"erased-{time.monotonic_ns()}", "tool": "e2e:crm"}
    with project_server.http() as http:
        created = http.post("/runs", json={"workflowId": "e2e-crm", "inputs": inputs})
        assert created.status_code == 201, created.text
        segment = created.json()["runId"].replace("/", "~2F")
        before = _until_ended(http, segment, POLL)
        kept, costs = _repeated(project_server, http, f"/runs/{segment}{POLL}")
        assert costs[2:] == [0] * (REPEATS - 2)
        assert kept[-1].content == before.content
        erased = http.post(f"/host/wopeval/runs/{segment}:erase-tool-content")
        assert erased.status_code == 200, erased.text
        after = _read(http, segment, POLL).json()["events"]
    called = [event for event in after if event["type"] == "agent.tool-called"]
    assert called
    assert all("inputs" not in event["payload"] for event in called)
    assert all(event["payload"]["argsHash"].startswith("sha256:") for event in called)
    was_called = [e for e in before.json()["events"] if e["type"] == "agent.tool-called"]
    assert all(
        event["payload"]["inputs"] == {"customer": inputs["customer"]} for event in was_called
    )


def test_the_retention_purge_drops_the_kept_polls_of_the_runs_it_scrubbed(
    backend: Backend, tmp_path: Path
) -> None:
    key = unique("retained")
    settings = host_settings(backend, tmp_path, retention_days=7, purge_interval_seconds=0.1)
    with running_host(settings, backend) as server, server.http() as http:
        created = http.post("/runs", json={"workflowId": COUNTER_WORKFLOW,
                                           "inputs": counter_inputs(key)})  # fmt: skip
        assert created.status_code == 201, created.text
        run_id = created.json()["runId"]
        segment = run_id.replace("/", "~2F")
        before = _until_ended(http, segment, POLL)
        kept, costs = _repeated(server, http, f"/runs/{segment}{POLL}")
        assert costs[2:] == [0] * (REPEATS - 2)
        assert kept[-1].content == before.content
        assert key in before.text

        # Written behind the host's back, as time passing would: nothing tells the cache.
        set_completed_at(server.database_url, run_id, datetime.now(UTC) - timedelta(days=8))
        deadline = time.monotonic() + RUN_DEADLINE_SECONDS
        while table_rows(server.database_url, "tool_calls", run_id=run_id)[0]["inputs"]:
            assert time.monotonic() < deadline, "the scheduled purge never erased the run"
            time.sleep(0.05)
        # The purge drops what was kept once its transaction has committed: a read that
        # lands between the two may still be the kept one, never one after a short while.
        deadline = time.monotonic() + SCRUBBED_DEADLINE_SECONDS
        while key in (after := _read(http, segment, POLL)).text:
            assert time.monotonic() < deadline, "the kept poll still shows the erased args"
            time.sleep(0.05)
    called = [event for event in after.json()["events"] if event["type"] == "agent.tool-called"]
    assert [event["payload"]["argsHash"][:7] for event in called] == ["sha256:"]


def test_a_repeated_list_is_answered_from_what_was_kept_until_a_run_of_the_tenant_changes(
    server: ServerHandle,
) -> None:
    page = "?limit=3"
    with server.http() as http, server.http(TENANT_B) as other:
        listed, costs = _repeated(server, http, f"/runs{page}")
        assert costs[2:] == [0] * (REPEATS - 2)
        assert {answer.content for answer in listed[2:]} == {listed[-1].content}
        theirs = other.get(f"/runs{page}").json()["runs"]
        created = http.post("/runs", json={"workflowId": NOOP_WORKFLOW, "inputs": {}})
        assert created.status_code == 201, created.text
        run_id = created.json()["runId"]
        # The new run dropped the kept page: the next one shows it first.
        assert http.get(f"/runs{page}").json()["runs"][0]["runId"] == run_id
        assert other.get(f"/runs{page}").json()["runs"] == theirs
