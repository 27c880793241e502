"""Every leg passes against wopeval; without a usable tenant B the cross-tenant legs block."""

from __future__ import annotations

from wopeval.conformance.legs_support import NOOP
from wopeval.conformance.results import Disposition, LegResult
from wopeval.conformance.runner import leg_ids, run_conformance
from wopeval.conformance.session import Target

from ._proxy import Behaviour, proxy_app
from ._servers import Host, serve_in_thread

PASS = Disposition.EXECUTED_PASS
CROSS_TENANT = {
    "openwop.requirement.0252.source-uniform",
    "openwop.requirement.0251.baseline-uniform",
    "openwop.scenario.v2-eval-recorded-fixtures",
    "openwop.scenario.v2-eval-regression-baseline",
}


def _by_id(results: tuple[LegResult, ...]) -> dict[str, LegResult]:
    return {result.id: result for result in results}


def test_every_leg_passes_through_a_transparent_proxy(host: Host) -> None:
    # The proxy changes nothing here, so the misbehaving variants differ by one alteration only.
    recorder = Behaviour()
    with serve_in_thread(proxy_app(host.base_url, recorder)) as url:
        report = run_conformance(Target(url, host.key_a, host.key_b))
    host.settle()
    assert {r.id: r.disposition for r in report.results} == dict.fromkeys(leg_ids(), PASS), [
        r for r in report.results if r.disposition is not PASS
    ]
    assert report.ok
    # Gating: no eval-suite fixture is ever started as a workflow.
    created = [f.json() for f in recorder.seen if f.method == "POST" and f.path == "/runs"]
    workflows = {body["workflowId"] for body in created if "workflowId" in body}
    assert workflows == {NOOP}


def test_without_a_tenant_b_key_the_cross_tenant_legs_are_blocked(host: Host) -> None:
    report = run_conformance(Target(host.base_url, host.key_a, None))
    host.settle()
    results = _by_id(report.results)
    blocked = {i for i, r in results.items() if r.disposition is Disposition.BLOCKED}
    assert blocked == CROSS_TENANT
    assert all(r.disposition is PASS for i, r in results.items() if i not in CROSS_TENANT)
    assert (
        "OPENWOP_TEST_TENANT_B_API_KEY" in results["openwop.requirement.0252.source-uniform"].detail
    )
    assert not report.ok


def test_a_tenant_b_key_of_tenant_a_is_blocked_not_passed(host: Host) -> None:
    report = run_conformance(Target(host.base_url, host.key_a, host.key_a), only=["*-uniform"])
    host.settle()
    assert [(r.id, r.disposition) for r in report.results] == [
        ("openwop.requirement.0252.source-uniform", Disposition.BLOCKED),
        ("openwop.requirement.0251.baseline-uniform", Disposition.BLOCKED),
    ]
    assert all("resolves to tenant A's tenant" in r.detail for r in report.results)
