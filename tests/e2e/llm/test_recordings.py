"""Model exchanges travel in a recordings bundle, and replay on the other store as at home.

Production runs of two LLM agents — the openai lane and a command-lane program
on the plain `openai` client, through the recording proxy — are exported from
one store (`recordings export`) and imported into a fresh store of the other
backend (`recordings import`: SQLite to PostgreSQL, and back). There an eval
with model replay answers every model turn from the imported exchanges, while
the agents' `base_url` names a port nothing listens on and the model server
that served production gets no request: each task's detail is the one the same
replay gives on the origin store. Erasure and retention reach the imported
exchanges like any others.
"""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from openwop_client.wire_id import project_id

from _backends import Backend
from _processes import WOPEVAL, free_port
from cli._support import run_cli
from wopeval.store._runs import utc

from .._server import ServerHandle, host_settings, running_host
from .._support import table_rows, unique
from ..evals._evals import (
    golden,
    live_calls,
    new_suite_id,
    publish,
    run_eval,
    set_completed_at,
    suite,
)
from ..mcp.conftest import CallLog
from .conftest import HERE, LlmHost, LlmProject
from .test_model_proxy import ADD_TURNS
from .test_openai_lane import (
    decided,
    produce,
    refund_suite,
    refund_turns,
    repeatable,
    user_message,
)


def _other_backend(backend: Backend, request: pytest.FixtureRequest) -> Backend:
    if backend.name == "postgres":
        return Backend("sqlite")
    return Backend("postgres", request.getfixturevalue("postgres_databases"))


def _replayed(handle: ServerHandle, document: dict[str, Any], task: str, source: str) -> Any:
    """Run the suite with the task's model and tools replayed from `source`; its task detail."""
    agent = document["targetAgentId"]
    with handle.http() as http:
        ran = run_eval(handle.client(), http, publish(http, document), agent,
                       fixtureRuns={task: source})  # fmt: skip
        assert ran.summary["passed"] is True, ran.summary
        assert ran.summary["fixtureMissCount"] == 0
        assert live_calls(http, ran.run_id) == 0
        path = f"/host/wopeval/runs/{project_id(ran.run_id)}"
        assert http.get(f"{path}/live-calls").json()["liveModelCalls"] == 0
        detail = http.get(f"{path}/tasks/{task}").json()
    (trial,) = detail["trialDetails"]
    assert {exchange["servedBy"] for exchange in trial["modelCalls"]} == {"replay"}
    return repeatable(detail)


def _in_utc(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with their times in UTC: SQLite hands them back naive, PostgreSQL zoned."""
    return [{name: utc(value) if isinstance(value, datetime) else value
             for name, value in row.items()} for row in rows]  # fmt: skip


def _project_without_a_provider(directory: Path) -> Path:
    """The LLM project, every agent's `base_url` on a loopback port nothing listens on."""
    directory.mkdir()
    (directory / "llm_shop_tools.py").write_text((HERE / "llm_shop_tools.py").read_text())
    nowhere = f"http://127.0.0.1:{free_port()}/v1"
    LlmProject(directory, nowhere, CallLog(directory / "calls.log")).write()
    return directory


@pytest.mark.postgres
def test_model_exchanges_travel_and_replay_on_another_store_with_no_provider_reachable(
    llm_host: LlmHost, backend: Backend, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    script = llm_host.server.script
    order = unique("B")
    refund = {"question": f"Refund order {order}"}
    script.add(user_message(refund), refund_turns(order))
    pinned_source, events = produce(llm_host, "llm-pinned", refund)
    question = unique("add")
    adding = {"question": question, "stream": True}
    script.add(question, ADD_TURNS)
    proxy_source, _ = produce(llm_host, "llm-proxy", adding)
    replays = {
        pinned_source: (refund_suite("llm.pinned", refund, decided(events)), "refund"),
        proxy_source: (
            suite(new_suite_id("travel"), [{"taskId": "add", "input": adding,
                  "expected": golden({"answer": "The sum is 5."}, "json-match")}],
                  target="llm.proxy-agent"),
            "add",
        ),
    }  # fmt: skip
    at_home = {
        source: _replayed(llm_host.handle, document, task, source)
        for source, (document, task) in replays.items()
    }

    bundle = tmp_path / "recordings.zip"
    exported = run_cli("recordings", "export", pinned_source, proxy_source, "-o", str(bundle),
                       "--data-dir", str(llm_host.handle.settings.data_dir),
                       "--database-url", llm_host.handle.database_url)  # fmt: skip
    assert exported.code == 0, exported.stderr
    elsewhere = _other_backend(backend, request)
    settings = host_settings(elsewhere, tmp_path / "ci",
                             project=_project_without_a_provider(tmp_path / "project"))  # fmt: skip
    store = [
        "--data-dir",
        str(settings.data_dir),
        "--database-url",
        settings.resolved_database_url(),
    ]
    imported = run_cli("recordings", "import", str(bundle), "--tenant", "tenant-a", *store)
    assert imported.code == 0, imported.stderr
    # Every column of every record travelled (imported under the same tenant: the same ids).
    for table in ("model_calls", "tool_calls", "invocations", "run_tool_listings"):
        for source in replays:
            at_origin = table_rows(llm_host.handle.database_url, table, run_id=source)
            assert at_origin or source == proxy_source, (table, source)  # it calls no tool
            travelled = table_rows(settings.resolved_database_url(), table, run_id=source)
            assert _in_utc(travelled) == _in_utc(at_origin), table
    listings = table_rows(settings.resolved_database_url(), "tool_listings")
    assert listings == table_rows(llm_host.handle.database_url, "tool_listings",
                                  digest=listings[0]["digest"])  # fmt: skip

    asked = len(script.received)
    with running_host(settings, elsewhere) as ci:
        for source, (document, task) in replays.items():
            assert _replayed(ci, document, task, source) == at_home[source]
        assert len(script.received) == asked, "a replayed model answer reached a model server"

        with ci.http() as http:
            erased = http.post(f"/host/wopeval/runs/{project_id(pinned_source)}:erase-tool-content")
            assert erased.status_code == 200, erased.text
    for row in table_rows(settings.resolved_database_url(), "model_calls", run_id=pinned_source):
        assert (row["request"], row["response"], row["erased_at"] is None) == (None, None, False)

    set_completed_at(settings.resolved_database_url(), proxy_source,
                     datetime.now(UTC) - timedelta(days=40))  # fmt: skip
    purged = subprocess.run([WOPEVAL, "purge", "--older-than-days", "30", *store],
                            capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert purged.returncode == 0, purged.stderr
    rows = table_rows(settings.resolved_database_url(), "model_calls", run_id=proxy_source)
    assert len(rows) == 2
    assert all(row["response"] is None and row["erased_at"] is not None for row in rows)
