"""`client._capabilities`: a body is sent only to a host advertising what it carries."""

from __future__ import annotations

from typing import Any

import pytest

from wopeval import client

FULL_FACET = {"modes": ["golden", "regression"], "baselineSelection": True,
              "recordedFixtures": True, "fixtureMatching": True}  # fmt: skip
PLAIN = client.EvalRequest("s@1.0.0", "agent")
BASELINE = client.EvalRequest("s@1.0.0", "agent", ("golden", "regression"), "t/r")
MODES = client.EvalRequest("s@1.0.0", "agent", ("golden",))
FIXTURES = client.EvalRequest("s@1.0.0", "agent", fixture_runs={"task": "t/s"})


def discovery(**facet: Any) -> dict[str, Any]:
    members = {name: value for name, value in {**FULL_FACET, **facet}.items() if value is not None}
    return {"protocolVersion": "2.46", "agents": {"status": "stable", "evalSuite": members}}


def missing(document: dict[str, Any], request: client.EvalRequest) -> str | None:
    found = client.missing_capability(document, request.body())
    return None if found is None else found.member


@pytest.mark.parametrize("request_", [PLAIN, BASELINE, MODES, FIXTURES])
def test_a_host_advertising_every_member_takes_every_body(request_: client.EvalRequest) -> None:
    assert missing(discovery(), request_) is None


@pytest.mark.parametrize("off", [None, False, "true", 1])
def test_evalmodes_and_baseline_need_baseline_selection(off: object) -> None:
    host = discovery(baselineSelection=off)
    assert missing(host, BASELINE) == "agents.evalSuite.baselineSelection"
    assert missing(host, MODES) == "agents.evalSuite.baselineSelection"
    baseline_only = client.EvalRequest("s@1.0.0", "agent", baseline_run_id="t/r")
    assert missing(host, baseline_only) == "agents.evalSuite.baselineSelection"
    assert missing(host, PLAIN) is None
    assert missing(host, FIXTURES) is None


@pytest.mark.parametrize("off", [None, False, "true", 1])
def test_fixture_runs_need_recorded_fixtures(off: object) -> None:
    host = discovery(recordedFixtures=off)
    assert missing(host, FIXTURES) == "agents.evalSuite.recordedFixtures"
    assert missing(host, PLAIN) is None
    assert missing(host, BASELINE) is None


@pytest.mark.parametrize("agents", [None, {"status": "stable"}, {"evalSuite": True}, []])
def test_an_eval_run_needs_the_eval_suite_facet(agents: object) -> None:
    host: dict[str, Any] = {"protocolVersion": "2.46"}
    if agents is not None:
        host["agents"] = agents
    assert missing(host, PLAIN) == "agents.evalSuite"
    assert client.missing_capability(host, {"workflowId": "w"}) is None


def test_the_refusal_names_the_member_and_what_needed_it() -> None:
    found = client.missing_capability(discovery(recordedFixtures=False), FIXTURES.body())
    assert isinstance(found, client.ClientError)
    assert "agents.evalSuite.recordedFixtures" in str(found)
    assert "fixtureRuns (--from-run)" in str(found)
    assert "no eval run was requested" in str(found)
