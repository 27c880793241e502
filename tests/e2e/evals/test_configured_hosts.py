"""Discovery of the eval members, and hosts with members switched off (docs/design.md §3).

A member that is off is not advertised, and the host then behaves as a host
without it: the property it governs is refused, and the refusal creates no run.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from _backends import Backend
from wopeval.settings import EvalFeatures

from .._server import TENANT_A, ServerHandle, host_settings, running_host
from .._support import NOOP_WORKFLOW, wait_terminal
from ._evals import (
    RECORDED_REPLAY,
    RECORDED_SOURCE,
    REGRESSION_BASE,
    REGRESSION_CANDIDATE,
    SEEDED_SUITES,
    eval_body,
    post_refused,
    run_eval,
)

MEMBERS = ("fixtureMatching", "fixtureErrors", "regressionVerdict", "baselineSelection",
           "recordedFixtures")  # fmt: skip


def _host(
    backend: Backend, factory: pytest.TempPathFactory, name: str, **features: Any
) -> Iterator[ServerHandle]:
    data_dir = factory.mktemp(f"{name}-{backend.name}")
    settings = host_settings(backend, data_dir, eval=EvalFeatures(**features))
    with running_host(settings, backend) as handle:
        yield handle


@pytest.fixture(scope="module")
def eval_off(backend: Backend, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerHandle]:
    yield from _host(backend, tmp_path_factory, "eval-off", enabled=False)


@pytest.fixture(scope="module")
def two_tasks(backend: Backend, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerHandle]:
    yield from _host(backend, tmp_path_factory, "two-tasks", max_tasks_per_suite=2)


@pytest.fixture(scope="module")
def no_baseline(
    backend: Backend, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerHandle]:
    yield from _host(backend, tmp_path_factory, "no-baseline", baseline_selection=False)


@pytest.fixture(scope="module")
def no_recorded(
    backend: Backend, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerHandle]:
    yield from _host(backend, tmp_path_factory, "no-recorded", recorded_fixtures=False)


def eval_facet(host: ServerHandle) -> dict[str, Any] | None:
    agents = host.client().discovery_capabilities().raw["agents"]
    facet: dict[str, Any] | None = agents.get("evalSuite")
    return facet


def test_the_default_host_advertises_every_eval_member(server: ServerHandle) -> None:
    facet = eval_facet(server)
    assert facet is not None
    assert facet["modes"] == ["golden", "rubric", "regression", "live-shadow"]
    assert facet["maxTasksPerSuite"] == 1000
    assert all(facet[member] is True for member in MEMBERS)
    fixtures = server.client().discovery_capabilities().raw["fixtures"]
    assert set(SEEDED_SUITES) <= set(fixtures)


def test_a_host_without_eval_suite_refuses_eval_with_422(eval_off: ServerHandle) -> None:
    assert eval_facet(eval_off) is None
    with eval_off.http(TENANT_A) as http:
        for body in (eval_body(REGRESSION_BASE), eval_body(RECORDED_SOURCE, evalModes=["golden"]),
                     eval_body("no-such-suite", "no.such-agent")):  # fmt: skip
            post_refused(http, body, 422, "capability_not_provided")
        client = eval_off.client()
        created = http.post("/runs", json={"workflowId": NOOP_WORKFLOW})
        assert created.status_code == 201
        run_id = created.json()["runId"]
        wait_terminal(client, run_id)
        assert client.runs_eval_summary(run_id) is None


def test_max_tasks_per_suite_is_advertised_and_enforced(two_tasks: ServerHandle) -> None:
    facet = eval_facet(two_tasks)
    assert facet is not None
    assert facet["maxTasksPerSuite"] == 2
    with two_tasks.http(TENANT_A) as http:
        for ref in (REGRESSION_BASE, REGRESSION_CANDIDATE):
            response = post_refused(http, eval_body(ref), 400, "validation_error")
            assert "maxTasksPerSuite" in response.json()["message"]
        one_task = run_eval(two_tasks.client(), http, RECORDED_REPLAY)
        assert one_task.summary["taskCount"] == 1


def test_without_baseline_selection_its_properties_are_refused(no_baseline: ServerHandle) -> None:
    facet = eval_facet(no_baseline)
    assert facet is not None
    assert "baselineSelection" not in facet
    assert facet["regressionVerdict"] is True
    assert facet["recordedFixtures"] is True
    with no_baseline.http(TENANT_A) as http:
        client = no_baseline.client()
        base = run_eval(client, http, REGRESSION_BASE)
        for fields in ({"evalModes": ["golden"]},
                       {"evalModes": ["golden", "regression"], "baselineRunId": base.run_id},
                       {"baselineRunId": base.run_id}):  # fmt: skip
            response = post_refused(http, eval_body(REGRESSION_CANDIDATE, **fields), 400,
                                    "validation_error")  # fmt: skip
            assert base.run_id not in response.text
        plain = run_eval(client, http, REGRESSION_CANDIDATE)
        assert plain.started["modes"] == ["golden"]
        assert "regression" not in plain.summary


def test_without_recorded_fixtures_fixture_runs_is_refused(no_recorded: ServerHandle) -> None:
    facet = eval_facet(no_recorded)
    assert facet is not None
    assert "recordedFixtures" not in facet
    assert facet["fixtureMatching"] is True
    assert facet["baselineSelection"] is True
    with no_recorded.http(TENANT_A) as http:
        client = no_recorded.client()
        source = run_eval(client, http, RECORDED_SOURCE)
        unknown = f"{TENANT_A}/{uuid.uuid4().hex}"
        for runs in ({"record": source.run_id}, {"record": unknown}, {}):
            response = post_refused(http, eval_body(RECORDED_REPLAY, fixtureRuns=runs), 400,
                                    "validation_error")  # fmt: skip
            assert source.run_id not in response.text
        assert run_eval(client, http, RECORDED_REPLAY).summary["passed"] is True


def test_the_refusals_of_switched_off_members_are_in_the_envelope(
    no_baseline: ServerHandle, no_recorded: ServerHandle
) -> None:
    for host, fields in (
        (no_baseline, {"evalModes": ["golden"]}),
        (no_recorded, {"fixtureRuns": {"record": f"{TENANT_A}/{'0' * 32}"}}),
    ):
        with host.http(TENANT_A) as http:
            response = http.post("/runs", json=eval_body(RECORDED_REPLAY, **fields))
        assert response.status_code == 400
        assert set(response.json()) <= {"error", "message", "details"}
        assert response.headers["content-type"].startswith("application/json")
