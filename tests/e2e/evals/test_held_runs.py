"""Eval runs held active by the gate agent: the summary while active, and unusable baselines.

A baseline that is still running, was cancelled or failed is refused with the
very bytes an unknown id gets (RFC 0251 §C); once the held run completes, the
same request is accepted, so it was the run's state that was refused.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from openwop_client import WopError
from openwop_client.types import CreateRunRequest
from openwop_client.wire_id import project_id

from .._gate import Gate
from .._server import TENANT_A, TENANT_B, ServerHandle
from .._support import NOOP_WORKFLOW, assert_error, assert_wop_error, wait_terminal
from ._evals import (
    RECORDED_REPLAY,
    assert_no_id,
    eval_body,
    finish,
    new_suite_id,
    post_refused,
    publish,
    run_eval,
    start_eval,
    suite,
    task,
)
from .conftest import GATE_AGENT

MODES = ("golden", "regression")


def gate_suite(suite_id: str, version: str, gate: Gate) -> dict[str, Any]:
    """One task for the gate agent: it waits on `gate`, then decides "released"."""
    held = {"taskId": "shared", "input": gate.inputs(), "expected":
            {"kind": "golden", "match": {"strategy": "exact", "value": "released"}}}  # fmt: skip
    return suite(suite_id, [held], version=version, modes=MODES, target=GATE_AGENT)


def candidate_suite(suite_id: str) -> dict[str, Any]:
    return suite(suite_id, [task("shared", answer="released")], version="9.0.0", modes=MODES)


def hold(eval_project_server: ServerHandle, http: httpx.Client, document: dict[str, Any],
         gate: Gate) -> str:  # fmt: skip
    run_id = start_eval(eval_project_server.client(), publish(http, document), GATE_AGENT)
    gate.wait_entered()
    return run_id


def test_the_summary_of_an_active_eval_run_is_409(
    eval_project_server: ServerHandle, gate: Gate
) -> None:
    client = eval_project_server.client()
    with eval_project_server.http(TENANT_A) as http:
        run_id = hold(eval_project_server, http, gate_suite(new_suite_id("held"), "1.0.0", gate),
                      gate)  # fmt: skip
        response = http.get(f"/runs/{project_id(run_id)}/eval-summary")
        body = assert_error(response, 409, "run_state_conflict")
        assert body["details"] == {"runStatus": "running"}
        with pytest.raises(WopError) as caught:
            client.runs_eval_summary(run_id)
        assert_wop_error(caught.value, 409, "run_state_conflict")
        assert client.runs_get(run_id).status == "running"

        gate.release()
        done = finish(client, http, run_id)
    assert done.summary["passed"] is True
    parsed = client.runs_eval_summary(run_id)
    assert parsed is not None
    assert parsed.passedCount == 1


def test_a_cancelled_eval_run_has_no_summary(eval_project_server: ServerHandle, gate: Gate) -> None:
    client = eval_project_server.client()
    with eval_project_server.http(TENANT_A) as http:
        run_id = hold(eval_project_server, http, gate_suite(new_suite_id("cancel"), "1.0.0", gate),
                      gate)  # fmt: skip
        client.runs_cancel(run_id)
        events = wait_terminal(client, run_id)
    assert events[-1].type == "run.cancelled"
    assert "eval.completed" not in [e.type for e in events]
    assert client.runs_get(run_id).status == "cancelled"
    assert client.runs_eval_summary(run_id) is None


def test_running_cancelled_and_failed_baselines_get_the_unknown_id_bytes(
    eval_project_server: ServerHandle, gates: list[Gate]
) -> None:
    suite_id = new_suite_id("held")
    client = eval_project_server.client()
    with eval_project_server.http(TENANT_A) as http:
        candidate = publish(http, candidate_suite(suite_id))
        # A failed eval run of the suite: the host stops while it is held.
        failed = hold(eval_project_server, http, gate_suite(suite_id, "1.0.0", gates[0]), gates[0])
    eval_project_server.restart()
    assert eval_project_server.client().runs_get(failed).status == "failed"

    with eval_project_server.http(TENANT_A) as http, \
            eval_project_server.http(TENANT_B) as http_b:  # fmt: skip
        cancelled = hold(eval_project_server, http, gate_suite(suite_id, "1.0.1", gates[1]),
                         gates[1])  # fmt: skip
        client.runs_cancel(cancelled)
        wait_terminal(client, cancelled)
        running = hold(eval_project_server, http, gate_suite(suite_id, "1.0.2", gates[2]),
                       gates[2])  # fmt: skip
        publish(http_b, candidate_suite(suite_id))
        foreign = run_eval(eval_project_server.client(TENANT_B), http_b, candidate)
        workflow = client.runs_create(CreateRunRequest(workflowId=NOOP_WORKFLOW)).runId
        wait_terminal(client, workflow)
        other_suite = run_eval(client, http, RECORDED_REPLAY).run_id

        unusable = {
            "unknown": f"{TENANT_A}/{uuid.uuid4().hex}",
            "not-decodable": "not-a-run-id",
            "other-tenant": foreign.run_id,
            "workflow-run": workflow,
            "other-suite-id": other_suite,
            "running": running,
            "cancelled": cancelled,
            "failed": failed,
        }
        statuses = {case: client.runs_get(run_id).status for case, run_id in unusable.items()
                    if case in ("running", "cancelled", "failed")}  # fmt: skip
        assert statuses == {"running": "running", "cancelled": "cancelled", "failed": "failed"}
        bodies = {}
        for case, run_id in unusable.items():
            body = eval_body(candidate, evalModes=list(MODES), baselineRunId=run_id)
            response = post_refused(http, body, 400, "validation_error")
            assert_no_id(response.text, run_id)
            bodies[case] = response.content
        assert len(set(bodies.values())) == 1, bodies
        assert client.runs_get(running).status == "running"

        # Released, the held run completes with a summary and becomes a usable baseline.
        gates[2].release()
        finish(client, http, running)
        accepted = run_eval(client, http, candidate, evalModes=list(MODES), baselineRunId=running)
    assert accepted.started["baselineRunId"] == running
    assert accepted.summary["regression"]["verdict"] == "unchanged"
    assert accepted.summary["regression"]["scoreDelta"] == 0.0
