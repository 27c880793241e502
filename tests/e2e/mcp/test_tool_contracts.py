"""Tool contracts: every run keeps, per MCP server it used, the `tools/list` it was offered.

A listing is stored once per tenant and digest however many runs were offered
it. An eval task replaying a run on a host that connects to no MCP server
(offline) is offered the tools the run recorded, with the servers stopped; on
any other host the tools offered now are compared with the recorded ones, and
each task says which were added, removed or changed — in its detail, `explain`,
JUnit, Markdown and the dashboard — and fails closed, unrun, under
`tools_changed = "fail"`. Erasure takes the listings with the runs' content.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
from openwop_client.types import CreateRunRequest
from openwop_client.wire_id import project_id
from sqlalchemy import update

from _backends import Backend
from cli._support import Result, run_cli
from wopeval.engine.runlog.steps import now
from wopeval.engine.runs.erasure import purge_expired
from wopeval.store import ListingRow, Store
from wopeval.store.tables import runs

from .._server import TENANT_A, TENANT_B, ServerHandle, host_settings, running_host
from .._support import table_rows, unique, wait_terminal
from ..evals._evals import golden, live_calls, new_suite_id, publish, run_eval, suite
from .conftest import CallLog, HttpMcpServer, write_project
from .test_mcp_tools import call, produce, replay_suite

TOOLS_V2 = ', TOOLS_V2 = "1"'
"""The counting server's second version (`_counting_server.py`)."""

CHANGES = [
    {"tool": "count:crash", "kind": "removed", "fields": []},
    {"tool": "count:extra", "kind": "added", "fields": []},
    {"tool": "count:lookup", "kind": "changed", "fields": ["inputSchema"]},
    {"tool": "count:refuse", "kind": "changed", "fields": ["description"]},
]
CHANGED_TEXT = (
    "MCP tools changed since the recording: count:crash removed, count:extra added, "
    "count:lookup changed (inputSchema), count:refuse changed (description)"
)
_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def task_detail(host: ServerHandle, run_id: str, task_id: str) -> dict[str, Any]:
    with host.http() as http:
        response = http.get(f"/host/wopeval/runs/{project_id(run_id)}/tasks/{task_id}")
    assert response.status_code == 200, response.text
    detail: dict[str, Any] = response.json()
    return detail


def offered(host: ServerHandle, run_id: str) -> dict[str, str]:
    """The MCP listings `run_id` keeps, server → digest."""
    return {
        row["server"]: row["digest"]
        for row in table_rows(host.database_url, "run_tool_listings", run_id=run_id)
    }


def dashboard_page(host: ServerHandle, path: str) -> str:
    with httpx.Client(base_url=host.base_url, trust_env=False, timeout=60.0) as browser:
        signed = browser.post("/ui/sign-in", data={"key": host.key_a, "next": "/ui/runs"})
        assert signed.status_code == 303, signed.text
        page = browser.get(path)
    assert page.status_code == 200, page.text
    return page.text


def cli_eval(settings_host: ServerHandle, project: Path, *args: str) -> tuple[Result, str]:
    """`wopeval eval` on an embedded host over `settings_host`'s store; returns the run id."""
    settings = settings_host.settings
    done = run_cli(
        "eval", *args, "--project", str(project), "--data-dir", str(settings.data_dir),
        "--database-url", settings.resolved_database_url(), "--api-key", settings_host.key_a,
    )  # fmt: skip
    found = re.search(r"Eval run (\S+)", done.stderr)
    assert found is not None, done.stdout + done.stderr
    return done, found.group(1)


def test_a_listing_is_kept_once_per_digest_and_a_changed_server_is_reported_tool_by_tool(
    backend: Backend, tmp_path: Path, call_log: CallLog, mcp_secret: str
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    write_project(project, call_log, mcp_secret)
    settings = host_settings(backend, tmp_path / "data", project=project)
    host = ServerHandle(settings, backend=backend.name)
    host.start()
    try:
        calls = [call("count:lookup", key=unique("key"))]
        source, _ = produce(host, *calls)
        second, _ = produce(host, *calls)
        ref = replay_suite(host, calls)

        (listing,) = table_rows(host.database_url, "tool_listings")
        assert listing["tenant"] == TENANT_A
        assert [tool["name"] for tool in listing["listing"]] == [
            "crash", "lookup", "refuse", "sleep"
        ]  # fmt: skip
        lookup = listing["listing"][1]
        assert lookup["description"] == "Look `key` up: its length."
        assert lookup["inputSchema"]["required"] == ["key"]
        assert offered(host, source) == offered(host, second) == {"count": listing["digest"]}

        with host.http() as http:
            same = run_eval(host.client(), http, ref, fixtureRuns={"replay": source})
        assert task_detail(host, same.run_id, "replay")["toolsChanged"] == []

        # The server's second version: one tool more, one less, two changed.
        write_project(project, call_log, mcp_secret, extra_env=TOOLS_V2)
        host.restart()
        with host.http() as http:
            changed = run_eval(host.client(), http, ref, fixtureRuns={"replay": source})
        # `report` (the default): the task runs as before, and says what changed.
        assert changed.summary["passed"] is True
        detail = task_detail(host, changed.run_id, "replay")
        assert detail["toolsChanged"] == CHANGES
        with host.http() as http:
            listed = http.get(f"/host/wopeval/runs/{project_id(changed.run_id)}/tasks").json()
        assert listed["tasks"][0]["toolsChanged"] == CHANGES
        assert len(table_rows(host.database_url, "tool_listings")) == 2
        task_page = dashboard_page(host, f"/ui/evals/{project_id(changed.run_id)}/tasks/replay")
        shown = task_page.split('id="tools-changed"', 1)[1].split("</dd>", 1)[0]
        assert "changed since the recording" in shown
        for change in CHANGES:
            assert f'<span class="mono">{change["tool"]}</span> {change["kind"]}' in shown
        eval_page = dashboard_page(host, f"/ui/evals/{project_id(changed.run_id)}")
        assert "MCP tools changed since the recording" in eval_page
    finally:
        host.stop()

    junit, markdown = tmp_path / "report.xml", tmp_path / "report.md"
    reported, run_id = cli_eval(
        host, project, ref, "--agent", "conformance.scripted-agent",
        f"--from-run=replay={source}", "--junit", str(junit), "--markdown", str(markdown),
    )  # fmt: skip
    assert reported.code == 0, reported.stdout + reported.stderr
    assert CHANGED_TEXT in junit.read_text()
    summary = markdown.read_text()
    assert "**Tools changed since the recording**" in summary
    assert "count:lookup changed (inputSchema)" in summary
    explained = run_cli(
        "explain", run_id, "replay", "--project", str(project),
        "--data-dir", str(settings.data_dir), "--database-url", settings.resolved_database_url(),
        "--api-key", host.key_a,
    )  # fmt: skip
    assert explained.code == 0, explained.stderr
    assert CHANGED_TEXT in " ".join(explained.stdout.split())

    # `--tools-changed fail`: the task fails closed, its agent never run, and says why.
    before = call_log.count()
    failed, failed_run = cli_eval(
        host, project, ref, "--agent", "conformance.scripted-agent",
        f"--from-run=replay={source}", "--tools-changed", "fail", "--junit", str(junit),
    )  # fmt: skip
    assert failed.code == 1, failed.stdout + failed.stderr
    reason = (
        "not run: its MCP tools changed since the recording (tools_changed = fail): "
        "count:crash removed, count:extra added"
    )
    assert reason in " ".join(failed.stdout.split())
    assert reason in junit.read_text()
    assert table_rows(settings.resolved_database_url(), "invocations", run_id=failed_run) == []
    assert call_log.count() == before

    # The same from the project's `[[evals]]` entry.
    manifest = project / "wopeval.toml"
    manifest.write_text(
        manifest.read_text() + f'\n[[evals]]\nname = "pinned"\nsuite = "{ref}"\n'
        f'agent = "conformance.scripted-agent"\nfixture_runs = {{ replay = "{source}" }}\n'
        'tools_changed = "fail"\n'
    )
    pinned, _ = cli_eval(host, project, "pinned")
    assert pinned.code == 1, pinned.stdout + pinned.stderr
    assert reason in " ".join(pinned.stdout.split())

    # Erasure takes the listings with the runs: a listing goes when no run holds it.
    host.start()
    try:
        with host.http() as http:
            erased = http.post(f"/host/wopeval/runs/{project_id(source)}:erase-tool-content")
            assert erased.status_code == 200, erased.text
            for run in (source, same.run_id, changed.run_id, run_id, failed_run):
                assert offered(host, run) == {}
            # `second` still holds the first version's listing; nothing holds the second's.
            assert [row["digest"] for row in table_rows(host.database_url, "tool_listings")] == [
                listing["digest"]
            ]
            erased = http.post(f"/host/wopeval/runs/{project_id(second)}:erase-tool-content")
            assert erased.status_code == 200, erased.text
        assert table_rows(host.database_url, "tool_listings") == []
    finally:
        host.stop()


def test_an_offline_eval_offers_the_recorded_tools_with_no_server_running(
    backend: Backend, tmp_path: Path, mcp_secret: str
) -> None:
    """A command-lane agent lists its tools and calls two of them; offline, with both MCP
    servers gone, the replay lists the same tools and decides the same."""
    log = CallLog(tmp_path / "calls.log")
    http_server = HttpMcpServer(log)
    http_server.start()
    project = tmp_path / "project"
    project.mkdir()
    try:
        write_project(project, log, mcp_secret, http_server)
        online = host_settings(backend, tmp_path / "data", project=project)
        key = unique("key")
        inputs = {"urlFile": str(tmp_path / "url"),
                  "calls": [{"tool": "count__lookup", "args": {"key": key}},
                            {"tool": "count-http__lookup", "args": {"key": key}}]}  # fmt: skip
        with running_host(online, backend) as host:
            client = host.client()
            source = client.runs_create(
                CreateRunRequest(workflowId="lanes-probe", inputs=inputs)
            ).runId
            events = wait_terminal(client, source)
            recorded = offered(host, source)
    finally:
        http_server.stop()
    decision = next(e.payload["decision"] for e in events if e.type == "agent.decided")
    assert decision["tools"] == ["count-http__lookup", "count__crash", "count__lookup",
                                 "count__refuse", "count__sleep"]  # fmt: skip
    assert set(recorded) == {"count", "count-http"}

    # Neither server could answer now: the HTTP one is stopped, the stdio one names no program.
    manifest = project / "wopeval.toml"
    stdio = json.dumps(sys.executable)
    manifest.write_text(manifest.read_text().replace(stdio, '"/nonexistent/mcp-server"', 1))
    before = log.count()
    offline = online.model_copy(update={"live_tools": False})
    with running_host(offline, backend) as host, host.http() as http:
        document = suite(new_suite_id("offline"), [{"taskId": "probe", "input": inputs,
                         "expected": golden(decision)}], target="lanes.probe")  # fmt: skip
        replayed = run_eval(host.client(), http, publish(http, document), "lanes.probe",
                            fixtureRuns={"probe": source})  # fmt: skip
        assert replayed.summary["passed"] is True, task_detail(host, replayed.run_id, "probe")
        assert replayed.summary["fixtureMissCount"] == 0
        assert live_calls(http, replayed.run_id) == 0
        detail = task_detail(host, replayed.run_id, "probe")
        # Served from the recording, not compared: there is no live listing to compare with.
        assert "toolsChanged" not in detail
        assert [c["servedBy"] for c in detail["trialDetails"][0]["calls"]] == ["fixture"] * 2
        # The eval run keeps the listings it was offered: the source's, by digest.
        assert offered(host, replayed.run_id) == recorded
    assert log.count() == before


def test_each_tenant_keeps_its_own_listings(mcp_host: ServerHandle) -> None:
    a_run, _ = produce(mcp_host, call("count:lookup", key=unique("a")))
    b_client = mcp_host.client(TENANT_B)
    b_run = b_client.runs_create(
        CreateRunRequest(workflowId="conformance-agent-counter",
                         inputs={"calls": [call("count:lookup", key=unique("b"))],
                                 "answer": "done"})
    ).runId  # fmt: skip
    assert wait_terminal(b_client, b_run)[-1].type == "run.completed"
    digest = offered(mcp_host, a_run)["count"]
    assert offered(mcp_host, b_run)["count"] == digest
    tenants = {
        row["tenant"] for row in table_rows(mcp_host.database_url, "tool_listings", digest=digest)
    }
    assert tenants == {TENANT_A, TENANT_B}

    async def read() -> tuple[dict[str, list[ListingRow]], dict[str, list[Any]]]:
        store = await Store.open(mcp_host.database_url)
        try:
            async with store.reading() as uow:
                # Each tenant reads through the handles the store issues it: its own runs only.
                b_owns = await uow.runs.states(TENANT_B, [a_run, b_run])
                a_owns = await uow.runs.states(TENANT_A, [b_run])
                return (
                    await uow.tool_listings.of_runs(TENANT_B, [s.handle for s in b_owns.values()]),
                    await uow.tool_listings.of_runs(TENANT_A, [s.handle for s in a_owns.values()]),
                )
        finally:
            await store.close()

    as_b, as_a = asyncio.run(read())
    assert set(as_b) == {b_run}, "tenant B read tenant A's run's listing"
    assert as_a == {}


def test_retention_purges_what_an_expired_run_was_offered(mcp_host: ServerHandle) -> None:
    """A run whose agent called nothing still kept its listings: retention erases them too."""
    expired, _ = produce(mcp_host)
    recent, _ = produce(mcp_host)
    assert "count" in offered(mcp_host, expired)

    async def purge() -> None:
        store = await Store.open(mcp_host.database_url)
        try:
            async with store.transaction() as uow:
                await uow.connection.execute(
                    update(runs)
                    .where(runs.c.run_id == expired)
                    .values(completed_at=now() - timedelta(days=8))
                )
            await purge_expired(store, retention_days=7)
        finally:
            await store.close()

    asyncio.run(purge())
    assert offered(mcp_host, expired) == {}
    assert "count" in offered(mcp_host, recent)
