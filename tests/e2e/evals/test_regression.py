"""RFC 0251: a client names an eval run's modes and its baseline; the paired verdict (§F)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from openwop_client.types import CreateRunRequest

from .._server import TENANT_A, TENANT_B, ServerHandle
from .._support import NOOP_WORKFLOW, wait_terminal
from ._evals import (
    RECORDED_REPLAY,
    REGRESSION_BASE,
    REGRESSION_CANDIDATE,
    EvalRun,
    assert_no_id,
    eval_body,
    golden,
    new_suite_id,
    post_refused,
    publish,
    run_eval,
    suite,
    task,
)

REGRESSION_SUITE_ID = "conformance.openwop.evals.regression"
BOTH_MODES = ["golden", "regression"]


@pytest.fixture(scope="module")
def base_runs(server: ServerHandle) -> dict[str, EvalRun]:
    """One completed run of the base fixture per tenant."""
    runs = {}
    for tenant in (TENANT_A, TENANT_B):
        with server.http(tenant) as http:
            runs[tenant] = run_eval(server.client(tenant), http, REGRESSION_BASE)
    return runs


@pytest.mark.parametrize("tenant", [TENANT_A, TENANT_B])
def test_candidate_against_base_is_unchanged_with_a_third_more_aggregate(
    server: ServerHandle, base_runs: dict[str, EvalRun], tenant: str
) -> None:
    base = base_runs[tenant]
    assert base.summary["aggregateScore"] == pytest.approx(2 / 3)
    assert base.started["modes"] == ["golden"]
    client = server.client(tenant)
    with server.http(tenant) as http:
        run = run_eval(client, http, REGRESSION_CANDIDATE, evalModes=BOTH_MODES,
                       baselineRunId=base.run_id)  # fmt: skip

    assert run.started["modes"] == BOTH_MODES
    assert run.started["baselineRunId"] == base.run_id
    regression = run.summary["regression"]
    assert regression["baselineRunId"] == run.started["baselineRunId"]
    assert regression["scoreDelta"] == pytest.approx(1 / 3)
    assert regression["scoreDelta"] == pytest.approx(
        run.summary["aggregateScore"] - base.summary["aggregateScore"]
    )
    # Every paired score is equal: a host comparing aggregates would say "improved".
    assert regression["verdict"] == "unchanged"
    assert regression["pairedTaskCount"] == 2
    assert regression["baselineOnlyTaskIds"] == ["base-only"]
    assert regression["candidateOnlyTaskIds"] == ["candidate-only"]
    assert [
        (t["taskId"], t["baselineScore"], t["score"], t["delta"], t["verdict"])
        for t in regression["tasks"]
    ] == [("shared-a", 1.0, 1.0, 0.0, "unchanged"), ("shared-b", 1.0, 1.0, 0.0, "unchanged")]
    (completed,) = run.of_type("eval.completed")
    assert completed["regressionVsBaseline"] == pytest.approx(1 / 3)

    parsed = client.runs_eval_summary(run.run_id)
    assert parsed is not None
    assert parsed.regression is not None
    assert parsed.regression.baselineRunId == base.run_id
    assert parsed.regression.scoreDelta == pytest.approx(1 / 3)
    assert parsed.suiteVersion == "1.1.0"
    assert parsed.suiteId == REGRESSION_SUITE_ID


def test_a_shared_task_that_now_fails_is_regressed(
    server: ServerHandle, http_a: httpx.Client
) -> None:
    suite_id = new_suite_id("regressed")
    good = [task("shared-a", answer="a"), task("shared-b", answer="b")]
    bad = [task("shared-a", answer="z", expected=golden("a")), task("shared-b", answer="b")]
    modes = ("golden", "regression")
    base_ref = publish(http_a, suite(suite_id, good, version="1.0.0", modes=modes))
    candidate_ref = publish(http_a, suite(suite_id, bad, version="2.0.0", modes=modes))
    client = server.client()
    base = run_eval(client, http_a, base_ref)
    run = run_eval(client, http_a, candidate_ref, evalModes=BOTH_MODES, baselineRunId=base.run_id)

    regression = run.summary["regression"]
    assert regression["verdict"] == "regressed"
    assert regression["scoreDelta"] == pytest.approx(-0.5)
    assert regression["pairedTaskCount"] == 2
    assert regression["baselineOnlyTaskIds"] == []
    assert regression["candidateOnlyTaskIds"] == []
    verdicts = {t["taskId"]: (t["delta"], t["verdict"]) for t in regression["tasks"]}
    assert verdicts == {"shared-a": (-1.0, "regressed"), "shared-b": (0.0, "unchanged")}
    assert run.summary["passed"] is False
    (completed,) = run.of_type("eval.completed")
    assert completed["regressionVsBaseline"] == pytest.approx(-0.5)

    # The other way round the same pair is an improvement.
    back = run_eval(client, http_a, base_ref, evalModes=BOTH_MODES, baselineRunId=run.run_id)
    assert back.summary["regression"]["verdict"] == "improved"
    assert back.summary["regression"]["scoreDelta"] == pytest.approx(0.5)


@pytest.fixture
def base_id(base_runs: dict[str, EvalRun]) -> str:
    return base_runs[TENANT_A].run_id


REFUSED_BODIES: dict[str, dict[str, Any]] = {
    "evalModes-without-mode": {"workflowId": NOOP_WORKFLOW, "evalModes": ["golden"]},
    "baselineRunId-without-mode": {"workflowId": NOOP_WORKFLOW, "baselineRunId": "{base}"},
    "evalModes-empty": eval_body(REGRESSION_CANDIDATE, evalModes=[]),
    "evalModes-repeated": eval_body(REGRESSION_CANDIDATE, evalModes=["golden", "golden"]),
    "evalModes-unknown": eval_body(REGRESSION_CANDIDATE, evalModes=["golden", "vibes"]),
    "mode-outside-suite": eval_body(REGRESSION_CANDIDATE, evalModes=["live-shadow"]),
    "baseline-without-regression": eval_body(
        REGRESSION_CANDIDATE, evalModes=["golden"], baselineRunId="{base}"),
    "regression-without-baseline": eval_body(REGRESSION_CANDIDATE, evalModes=BOTH_MODES),
    "configurable-evalModes": eval_body(
        REGRESSION_CANDIDATE, configurable={"version": 1, "evalModes": BOTH_MODES}),
    "configurable-baselineRunId": eval_body(
        REGRESSION_CANDIDATE, configurable={"version": 1, "baselineRunId": "{base}"}),
    "evalModes-not-a-list": eval_body(REGRESSION_CANDIDATE, evalModes="golden"),
}  # fmt: skip


def _fill(value: Any, base: str) -> Any:
    if isinstance(value, str):
        return value.replace("{base}", base)
    if isinstance(value, dict):
        return {k: _fill(v, base) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, base) for v in value]
    return value


@pytest.mark.parametrize("case", list(REFUSED_BODIES))
def test_each_rfc_0251_field_refusal_is_400_and_creates_no_run(
    http_a: httpx.Client, base_id: str, case: str
) -> None:
    body = _fill(REFUSED_BODIES[case], base_id)
    response = post_refused(http_a, body, 400, "validation_error")
    assert_no_id(response.text, base_id)


def test_a_mode_outside_the_host_is_refused(http_a: httpx.Client, base_id: str) -> None:
    suite_id = new_suite_id("adversarial")
    ref = publish(http_a, suite(suite_id, [task("t")], modes=("golden", "regression",
                                                               "adversarial")))  # fmt: skip
    for modes in (["adversarial"], ["golden", "regression", "adversarial"]):
        response = post_refused(
            http_a, eval_body(ref, evalModes=modes, baselineRunId=base_id), 400, "validation_error"
        )
        assert "host" in response.json()["message"]


def test_a_baseline_without_eval_modes_is_refused(http_a: httpx.Client, base_id: str) -> None:
    """RFC 0251 §B: absent evalModes names no regression, so a baseline beside it is refused."""
    body = eval_body(REGRESSION_CANDIDATE, baselineRunId=base_id)
    response = post_refused(http_a, body, 400, "validation_error")
    assert "needs regression" in response.json()["message"]
    assert_no_id(response.text, base_id)


@pytest.mark.parametrize(("tenant", "other"), [(TENANT_A, TENANT_B), (TENANT_B, TENANT_A)])
def test_every_unusable_baseline_gets_the_same_bytes_without_the_id(
    server: ServerHandle, base_runs: dict[str, EvalRun], tenant: str, other: str
) -> None:
    client = server.client(tenant)
    with server.http(tenant) as http:
        workflow = client.runs_create(CreateRunRequest(workflowId=NOOP_WORKFLOW)).runId
        wait_terminal(client, workflow)
        other_suite = run_eval(client, http, RECORDED_REPLAY).run_id
        unusable = {
            "unknown": f"{tenant}/{uuid.uuid4().hex}",
            "not-decodable": "not-a-run-id",
            "other-tenant-base": base_runs[other].run_id,
            "workflow-run": workflow,
            "other-suite-id": other_suite,
        }
        bodies = {}
        for case, run_id in unusable.items():
            body = eval_body(REGRESSION_CANDIDATE, evalModes=BOTH_MODES, baselineRunId=run_id)
            response = post_refused(http, body, 400, "validation_error")
            assert_no_id(response.text, run_id)
            assert "details" not in response.json()
            bodies[case] = response.content
        assert len(set(bodies.values())) == 1, bodies

        # The caller's own base run of the same suiteId is usable: the refusals are not blanket.
        usable = run_eval(client, http, REGRESSION_CANDIDATE, evalModes=BOTH_MODES,
                          baselineRunId=base_runs[tenant].run_id)  # fmt: skip
        assert usable.summary["regression"]["baselineRunId"] == base_runs[tenant].run_id
