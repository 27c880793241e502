"""An agent in its own process, run by a queue worker: the worker serves the invocation's
MCP endpoint and model proxy, so its tool calls and its model call are served and recorded
as on an API process."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from openwop_client.wire_id import project_id

from _model_server import ModelScript, ModelServer

from .conftest import TOOL, Fleet, wait_terminal

AGENT = "scale.command-agent"
QUESTION = "Which shelf holds order 7?"


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    script = ModelScript()
    script.add(QUESTION, [{"content": "shelf B"}])
    with ModelServer(script) as server:
        yield server


def test_a_command_agent_on_a_worker_reaches_its_tools_and_model_through_the_worker(
    fleet: Fleet, model_server: ModelServer
) -> None:
    api = fleet.serve()
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    # The worker's proxy adds OPENAI_API_KEY at egress: the stand-in, like OpenAI, wants one.
    upstream = (("OPENAI_BASE_URL", model_server.base_url), ("OPENAI_API_KEY", "sk-worker"))
    fleet.worker(env=(*upstream, ("PATH", path)))
    args = {"order": 7}
    document = {
        "suiteId": "scale-agents.evals.command",
        "version": "1.0.0",
        "modes": ["golden"],
        "targetAgentId": AGENT,
        "tasks": [
            {
                "taskId": "shelf",
                "input": {"args": args, "question": QUESTION, "http10": True},
                "expected": {
                    "kind": "golden",
                    "match": {
                        "strategy": "json-match",
                        "value": {
                            "tool": {"shelf": "B"},
                            "model": "shelf B",
                            # Its stream through the worker, read as an HTTP/1.0 client reads
                            # it: ended by the close, not framed in chunks it cannot read.
                            "http10": {"chunked": False, "text": "shelf B"},
                        },
                    },
                },
                "fixtures": {
                    "toolResponses": [{"tool": TOOL, "args": args, "response": {"shelf": "B"}}],
                    "onMiss": "fail",
                },
            }
        ],
    }
    with fleet.http(api) as http:
        assert http.put("/host/wopeval/suites", json=document).status_code == 201
        created = http.post(
            "/runs",
            json={
                "mode": "eval",
                "evalSuiteRef": "scale-agents.evals.command@1.0.0",
                "agentId": AGENT,
            },
        )
        assert created.status_code == 201, created.text
        run_id = created.json()["runId"]
        final = wait_terminal(http, run_id)
        summary = http.get(f"/runs/{project_id(run_id)}/eval-summary").json()
        detail = http.get(f"/host/wopeval/runs/{project_id(run_id)}/tasks/shelf").json()
    assert final["status"] == "completed", final
    assert summary["passedCount"] == 1, str(detail)[:3000]
    (call,) = fleet.rows("tool_calls", run_id=run_id)
    assert (call["tool"], call["served_by"], call["agent_id"]) == (TOOL, "fixture", AGENT)
    model_calls = sorted(fleet.rows("model_calls", run_id=run_id), key=lambda row: row["ordinal"])
    assert [(row["via"], row["stream"]) for row in model_calls] == [
        ("proxy", False),
        ("proxy", True),
    ]
    assert [
        r.body["messages"][0]["content"] for r in model_server.script.requests_with(QUESTION)
    ] == [QUESTION, QUESTION]


JUDGED = "Order 7 is on shelf B."


def test_a_rubric_task_on_a_worker_is_judged_through_the_worker(fleet: Fleet) -> None:
    script = ModelScript()
    verdict = {"criteria": [{"criterion": 1, "score": 1, "reason": "it names the shelf"}]}
    script.add(JUDGED, [{"json": verdict}], system_contains="Score the answer")
    document = {
        "suiteId": "scale-agents.evals.rubric",
        "version": "1.0.0",
        "modes": ["rubric"],
        "targetAgentId": "scale.agent",
        "tasks": [
            {
                "taskId": "shelf",
                "input": {"answer": JUDGED},
                "expected": {
                    "kind": "rubric",
                    "rubric": [{"criterion": "names the shelf", "weight": 1}],
                },
            }
        ],
    }
    with ModelServer(script) as server:
        api = fleet.serve()
        fleet.worker(env=(("OPENAI_BASE_URL", server.base_url), ("OPENAI_API_KEY", "sk-w")))
        with fleet.http(api) as http:
            assert http.put("/host/wopeval/suites", json=document).status_code == 201
            body = {"mode": "eval", "evalSuiteRef": "scale-agents.evals.rubric@1.0.0",
                    "agentId": "scale.agent"}  # fmt: skip
            created = http.post("/runs", json=body)
            assert created.status_code == 201, created.text
            run_id = created.json()["runId"]
            final = wait_terminal(http, run_id)
            detail = http.get(f"/host/wopeval/runs/{project_id(run_id)}/tasks/shelf").json()
            summary = http.get(f"/runs/{project_id(run_id)}/eval-summary").json()
    assert final["status"] == "completed", final
    # The judge's standing, decided at create, reached the worker in the stored plan: a
    # `gate = false` judge's task is advisory (docs/graders.md, "Calibration").
    advisory = {"judgeId": "scale.judge", "gate": False, "labels": 0}
    assert summary["tasks"][0]["advisory"] == advisory, summary
    grade = detail["trialDetails"][0]["grade"]
    assert (grade["passed"], grade["score"]) == (True, 1.0), grade
    assert grade["judge"]["criteria"][0]["reason"] == "it names the shelf"
    (judged,) = fleet.rows("model_calls", run_id=run_id)
    assert (judged["via"], judged["api"], judged["agent_id"]) == (
        "judge",
        "responses",
        "judge:scale.judge",
    )
    assert len(script.requests_with(JUDGED)) == 1
