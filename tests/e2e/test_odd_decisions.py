"""An agent's odd but legal decision is kept and served, on both stores.

tests/e2e/test_odd_content.py has a live tool answer odd content; here the agent
decides it: a string with a NUL, a lone surrogate (`"\\ud800"`), 300 levels of lists,
odd keys, or an integer beyond 64 bits, from an in-process agent and from a
command-lane agent's process (whose decision the host parses from its text, as an
http-lane agent's). The run's outputs, its events (polled and streamed), the dashboard's
pages and a bundle of the run all give it back (docs/decisions.md, "Odd content in an
agent's decision").
"""

from __future__ import annotations

import asyncio
import json
import zipfile
from pathlib import Path
from typing import Any

import httpx
import pytest
from openwop_client.types import CreateRunRequest
from openwop_client.wire_id import project_id

from cli._support import run_cli

from ._bundles import bundle_rows, export_runs, import_bundle
from ._server import TENANT_B, ServerHandle
from ._support import wait_terminal
from .evals._evals import golden, new_suite_id, publish, run_eval, suite
from .test_big_integers import WEI
from .test_odd_content import ODD

DECIDED: dict[str, Any] = {**ODD, "wei": WEI}
OUTPUT_AGENT = "e2e.odd-output-agent"


def _get(http: httpx.Client, path: str, **params: Any) -> Any:
    """A read of the API, parsed by the standard library (lone surrogates, any depth and
    any integer read back as written)."""
    response = http.get(path, params=params)
    assert response.status_code == 200, (path, response.text[:500])
    return json.loads(response.text)


@pytest.mark.parametrize("workflow", ["e2e-odd-output", "e2e-odd-command"])
@pytest.mark.parametrize("kind", sorted(DECIDED))
def test_an_agents_odd_decision_is_kept(
    project_server: ServerHandle, workflow: str, kind: str, tmp_path: Path
) -> None:
    decided = {"odd": DECIDED[kind]}
    client = project_server.client()
    run_id = client.runs_create(CreateRunRequest(workflowId=workflow, inputs={"kind": kind})).runId
    assert wait_terminal(client, run_id)[-1].type == "run.completed"
    wire_id = project_id(run_id)
    with project_server.http() as http:
        run = _get(http, f"/runs/{wire_id}")
        listed = _get(http, "/runs", workflowId=workflow)["runs"]
        events = _get(http, f"/runs/{wire_id}/events/poll", afterSequence=-1)["events"]
        _get(http, f"/host/wopeval/runs/{wire_id}/invocations")
        streamed = http.get(
            f"/runs/{wire_id}/events",
            params={"streamMode": "debug"},
            headers={"Accept": "text/event-stream"},
        )
        assert streamed.status_code == 200, streamed.text
    assert run["status"] == "completed"
    outputs = run["extensions"]["wopeval.run"]["outputs"]
    assert json.dumps(outputs) == json.dumps({"agent": {"decision": decided}}), outputs
    (in_list,) = [r for r in listed if r["runId"] == run["runId"]]
    assert in_list["extensions"]["wopeval.run"]["outputs"] == outputs
    (decision,) = [e["payload"]["decision"] for e in events if e["type"] == "agent.decided"]
    assert json.dumps(decision) == json.dumps(decided)
    (frame,) = [f for f in streamed.text.split("\n\n") if "event: agent.decided" in f]
    data = "".join(line[6:] for line in frame.splitlines() if line.startswith("data: "))
    assert json.dumps(json.loads(data)["payload"]["decision"]) == json.dumps(decided)

    with httpx.Client(base_url=project_server.base_url, trust_env=False, timeout=60.0) as browser:
        signed = browser.post("/ui/sign-in", data={"key": project_server.key_a, "next": "/ui/runs"})
        assert signed.status_code == 303, signed.text
        for page in (f"/ui/runs/{wire_id}", "/ui/runs"):
            shown = browser.get(page)
            assert shown.status_code == 200, (page, shown.text[:500])

    path = tmp_path / "odd.zip"
    asyncio.run(export_runs(project_server.database_url, [run_id], path))
    with zipfile.ZipFile(path) as archive:
        (row,) = bundle_rows(archive, run_id, "runs")
    assert json.dumps(row["outputs"]) == json.dumps(outputs)
    (imported,) = asyncio.run(import_bundle(project_server.database_url, path, TENANT_B))
    with project_server.http(TENANT_B) as http:
        again = _get(http, f"/runs/{project_id(imported)}")
    assert json.dumps(again["extensions"]["wopeval.run"]["outputs"]) == json.dumps(outputs)


@pytest.mark.parametrize("kind", sorted(DECIDED))
def test_an_eval_trials_odd_decision_is_kept(project_server: ServerHandle, kind: str) -> None:
    """A trial's decision, judged and shown in its task detail, the task list and the
    eval run's page (a suite's expected value cannot be odd: a request body may not
    carry one, so the trial fails its golden judge, as it should)."""
    decided = {"odd": DECIDED[kind]}
    client = project_server.client()
    with project_server.http() as http:
        task = {"taskId": kind, "input": {"kind": kind}, "expected": golden("plain")}
        ref = publish(http, suite(new_suite_id("odd-decision"), [task], target=OUTPUT_AGENT))
        run = run_eval(client, http, ref, OUTPUT_AGENT)
        wire_id = project_id(run.run_id)
        detail = _get(http, f"/host/wopeval/runs/{wire_id}/tasks/{kind}")
        _get(http, f"/host/wopeval/runs/{wire_id}/tasks")
        _get(http, f"/runs/{wire_id}/eval-summary")
        _get(http, f"/runs/{wire_id}")
    assert run.summary["passed"] is False
    (trial,) = detail["trialDetails"]
    assert json.dumps(trial["decision"]) == json.dumps(decided)
    with httpx.Client(base_url=project_server.base_url, trust_env=False, timeout=60.0) as browser:
        signed = browser.post("/ui/sign-in", data={"key": project_server.key_a, "next": "/ui/runs"})
        assert signed.status_code == 303, signed.text
        for page in (f"/ui/evals/{wire_id}", f"/ui/evals/{wire_id}/tasks/{kind}", "/ui/runs"):
            shown = browser.get(page)
            assert shown.status_code == 200, (page, shown.text[:500])
            if kind == "surrogate" and "tasks" in page:
                assert "\\ud800" in shown.text  # its JSON escape, where no UTF-8 holds it

    # `wopeval explain` says why, in text and as JSON (a lone surrogate as its escape).
    remote = ("--url", project_server.base_url, "--api-key", project_server.key_a)
    said = run_cli("explain", run.run_id, kind, *remote)
    assert said.code == 0, said.stderr
    said_json = run_cli("explain", run.run_id, kind, "--json", *remote)
    assert said_json.code == 0, said_json.stderr
    (explained,) = json.loads(said_json.stdout)["trialDetails"]
    assert json.dumps(explained["decision"]) == json.dumps(decided)
