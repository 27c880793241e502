"""RFC 0252 §E and Security: a fork never reads the source; erasure reaches every copy; purge."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import rfc8785
from openwop_client import WopError
from openwop_client.types import CreateRunRequest, ForkRunRequest
from openwop_client.wire_id import project_id

from _backends import Backend

from .._server import TENANT_A, ServerHandle, host_settings
from .._support import COUNTER_WORKFLOW, assert_wop_error, table_rows, unique, wait_terminal
from ._evals import (
    EvalRun,
    counter_call,
    delete_run_rows,
    eval_body,
    new_suite_id,
    payloads,
    post_refused,
    publish,
    raw_summary,
    run_count,
    run_eval,
    set_completed_at,
    set_status,
    suite,
    task,
)

WOPEVAL = Path(sys.executable).parent / "wopeval"


def args_hash(args: Any) -> str:
    return "sha256:" + hashlib.sha256(rfc8785.dumps(args)).hexdigest()


def counter_script(key: str) -> dict[str, Any]:
    return {"calls": [counter_call("inc", key), counter_call("read", key)], "answer": "done"}


def production_run(server: ServerHandle, key: str) -> tuple[str, list[Any]]:
    client = server.client()
    created = client.runs_create(CreateRunRequest(workflowId=COUNTER_WORKFLOW,
                                                  inputs=counter_script(key)))  # fmt: skip
    events = wait_terminal(client, created.runId)
    assert events[-1].type == "run.completed"
    return created.runId, events


def recorded_calls(events: list[Any]) -> list[dict[str, Any]]:
    """The calls a recorded run made, as a scripted-agent `calls` list."""
    return [
        {"tool": p["toolName"], "args": p["inputs"]} for p in payloads(events, "agent.tool-called")
    ]


def replay_suite(http: httpx.Client, key: str) -> str:
    """A suite whose one task `record` replays the counter script of `key`, without fixtures."""
    script = counter_script(key)
    return publish(http, suite(new_suite_id("replay"), [task("record", script["calls"])]))


def assert_scrubbed(events: list[Any]) -> None:
    called, returned = (
        payloads(events, "agent.tool-called"),
        payloads(events, "agent.tool-returned"),
    )
    assert called
    assert returned
    for payload in called:
        assert "inputs" not in payload
        assert payload["argsHash"].startswith("sha256:")
    for payload in returned:
        assert "outcome" not in payload
        assert payload["status"] == "ok"


def test_a_fork_of_a_fixture_runs_eval_never_reads_its_source(
    server: ServerHandle, http_a: httpx.Client
) -> None:
    key = unique("fork")
    source, _ = production_run(server, key)
    original = run_eval(server.client(), http_a, replay_suite(http_a, key),
                        fixtureRuns={"record": source})  # fmt: skip
    assert original.summary["passed"] is True
    assert original.summary["fixtureMissCount"] == 0

    deleted = delete_run_rows(server.database_url, source)
    assert deleted == {"runs": 1, "events": deleted["events"], "tool_calls": 2}
    assert deleted["events"] > 0
    assert http_a.get(f"/runs/{project_id(source)}").status_code == 404

    client = server.client()
    fork = client.runs_fork(original.run_id, ForkRunRequest(fromSeq=0, mode="replay"))
    assert fork.sourceRunId == original.run_id
    assert fork.mode == "replay"
    events = wait_terminal(client, fork.runId)
    assert [(e.sequence, e.type, e.payload) for e in events] == [
        (e.sequence, e.type, e.payload) for e in original.events
    ]
    assert events[-1].type == "run.completed"
    assert {e.runId for e in events} == {fork.runId}
    assert not {e.eventId for e in events} & {e.eventId for e in original.events}
    assert raw_summary(http_a, fork.runId) == original.summary
    assert client.runs_get(fork.runId).status == "completed"
    assert table_rows(server.database_url, "tool_calls", run_id=source) == []


def test_erasure_reaches_every_copy_and_refuses_what_it_erased(
    server: ServerHandle, http_a: httpx.Client, http_b: httpx.Client
) -> None:
    key = unique("erase")
    source, recorded = production_run(server, key)
    evaluated: EvalRun = run_eval(server.client(), http_a, replay_suite(http_a, key),
                                  fixtureRuns={"record": source})  # fmt: skip
    unknown = post_refused(http_a, eval_body(replay_suite(http_a, key),
                                             fixtureRuns={"record": f"{TENANT_A}/{'f' * 32}"}),
                           400, "validation_error")  # fmt: skip

    client = server.client()
    forked = client.runs_fork(evaluated.run_id, ForkRunRequest(fromSeq=0, mode="replay")).runId
    assert wait_terminal(client, forked)[-1].type == "run.completed"

    foreign = http_b.post(f"/host/wopeval/runs/{project_id(source)}:erase-tool-content")
    assert foreign.status_code == 403
    assert foreign.json()["error"] == "id_tenant_mismatch"
    assert table_rows(server.database_url, "tool_calls", run_id=source)[0]["inputs"] is not None

    erased = http_a.post(f"/host/wopeval/runs/{project_id(source)}:erase-tool-content")
    assert erased.status_code == 200, erased.text
    # The source, the eval run served from it and that run's fork: two calls and a copy each.
    assert erased.json() == {"runId": source, "erasedRuns": 3, "erasedCalls": 6, "erasedCopies": 2}

    again = post_refused(http_a, eval_body(replay_suite(http_a, key),
                                           fixtureRuns={"record": source}),
                         400, "validation_error")  # fmt: skip
    assert again.content == unknown.content

    before = run_count(http_a)
    for run_id in (evaluated.run_id, forked):
        with pytest.raises(WopError) as caught:
            client.runs_fork(run_id, ForkRunRequest(fromSeq=0, mode="replay"))
        assert_wop_error(caught.value, 410, "wopeval.eval_recorded_fixtures_gone")
    assert run_count(http_a) == before

    scrubbed = ((source, recorded), (evaluated.run_id, evaluated.events),
                (forked, evaluated.events))  # fmt: skip
    for run_id, args_source in scrubbed:
        events = wait_terminal(client, run_id)
        assert_scrubbed(events)
        expected = [args_hash(p["inputs"]) for p in payloads(args_source, "agent.tool-called")]
        assert [p["argsHash"] for p in payloads(events, "agent.tool-called")] == expected
    # The summary of the eval run is a content-free fact: erasure leaves it as it was.
    assert raw_summary(http_a, evaluated.run_id) == evaluated.summary


@pytest.fixture
def purge_host(backend: Backend, tmp_path: Path) -> Iterator[ServerHandle]:
    handle = ServerHandle(host_settings(backend, tmp_path / "data"), backend=backend.name)
    handle.start()
    try:
        yield handle
    finally:
        handle.stop()


def test_purge_erases_expired_tool_content(purge_host: ServerHandle, backend: Backend) -> None:
    expired, recorded = production_run(purge_host, unique("expired"))
    recent, _ = production_run(purge_host, unique("recent"))
    with purge_host.http(TENANT_A) as http:
        ref = publish(
            http, suite(new_suite_id("purge"), [task("record", recorded_calls(recorded))])
        )
        taker = run_eval(purge_host.client(), http, ref, fixtureRuns={"record": expired})
    assert taker.summary["passed"] is True
    purge_host.stop()
    url = purge_host.database_url
    set_completed_at(url, expired, datetime.now(UTC) - timedelta(days=40))

    where = (["--database-url", url] if backend.name == "postgres"
             else ["--data-dir", str(purge_host.settings.data_dir)])  # fmt: skip

    def purge() -> str:
        done = subprocess.run(
            [str(WOPEVAL), "purge", "--older-than-days", "30", *where],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    # While the eval run that copied the source has not ended, the source waits.
    set_status(url, taker.run_id, "running")
    deferred = purge()
    assert "erased tool content of 0 runs (0 calls, 0 derived copies)" in deferred
    assert "deferred 1 expired runs: a run that copied their content has not ended" in deferred
    set_status(url, taker.run_id, "completed")
    done = purge()
    # The expired source and, through its derived copy, the recent eval run served from it.
    assert "erased tool content of 2 runs (4 calls, 1 derived copies)" in done
    assert "deferred" not in done

    assert {(r["inputs"], r["result"]) for r in table_rows(url, "tool_calls", run_id=expired)} == {
        (None, None)
    }
    assert all(r["erased_at"] is not None for r in table_rows(url, "tool_calls", run_id=expired))
    kept = table_rows(url, "tool_calls", run_id=recent)
    assert all(r["inputs"] is not None and r["erased_at"] is None for r in kept)
    assert kept

    purge_host.start()
    events = wait_terminal(purge_host.client(), expired)
    assert_scrubbed(events)
    assert [p["argsHash"] for p in payloads(events, "agent.tool-called")] == [
        args_hash(p["inputs"]) for p in payloads(recorded, "agent.tool-called")
    ]
    fresh = wait_terminal(purge_host.client(), recent)
    assert all("inputs" in p for p in payloads(fresh, "agent.tool-called"))
    assert_scrubbed(wait_terminal(purge_host.client(), taker.run_id))
    with pytest.raises(WopError) as caught:
        purge_host.client().runs_fork(taker.run_id, ForkRunRequest(fromSeq=0, mode="replay"))
    assert_wop_error(caught.value, 410, "wopeval.eval_recorded_fixtures_gone")
