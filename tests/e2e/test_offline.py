"""An offline host (`live_tools = False`): fixtures still answer; nothing reaches a live tool."""

from __future__ import annotations

from pathlib import Path

from openwop_client.types import CreateRunRequest
from openwop_client.wire_id import project_id

from _backends import Backend

from ._server import host_settings, running_host
from ._support import COUNTER_WORKFLOW, counter_inputs, read_counter, unique, wait_terminal


def test_an_offline_host_serves_recordings_and_runs_nothing_live(
    backend: Backend, tmp_path: Path
) -> None:
    online = host_settings(backend, tmp_path / "data")
    with running_host(online, backend) as host:
        client = host.client()
        source = client.runs_create(
            CreateRunRequest(
                mode="eval",
                evalSuiteRef="conformance-eval-recorded-source",
                agentId="conformance.scripted-agent",
            )
        ).runId
        assert wait_terminal(client, source)[-1].type == "run.completed"
        with host.http() as http:
            recorded = read_counter(http, "conformance-recorded")

    offline = online.model_copy(update={"live_tools": False})
    with running_host(offline, backend) as host, host.http() as http:
        client = host.client()
        replay = client.runs_create(
            CreateRunRequest(
                mode="eval",
                evalSuiteRef="conformance-eval-recorded-replay",
                agentId="conformance.scripted-agent",
                fixtureRuns={"record": source},
            )
        ).runId
        assert wait_terminal(client, replay)[-1].type == "run.completed"
        summary = http.get(f"/runs/{project_id(replay)}/eval-summary").json()
        assert (summary["passed"], summary["fixtureMissCount"]) == (True, 0)

        key = unique("offline")
        live = client.runs_create(
            CreateRunRequest(workflowId=COUNTER_WORKFLOW, inputs=counter_inputs(key))
        ).runId
        events = wait_terminal(client, live)
        returned = next(e for e in events if e.type == "agent.tool-returned")
        assert returned.payload["status"] == "error"
        assert returned.payload["error"]["code"] == "live_tools_disabled"
        assert read_counter(http, key) == 0
        assert read_counter(http, "conformance-recorded") == recorded
