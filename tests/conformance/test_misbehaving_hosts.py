"""Each leg can fail: a host that gets one thing wrong turns exactly the legs that watch it.

Every case runs the whole plan through a proxy that alters one behaviour of a
real wopeval host, then asserts the exact set of `executed-fail` legs (every
other leg must still pass, so the failure is the alteration's and nothing
else's) and what the leg under test says it observed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from wopeval.conformance.legs_support import CANDIDATE
from wopeval.conformance.results import Disposition, Report
from wopeval.conformance.runner import run_conformance
from wopeval.conformance.session import Target

from ._misbehaviours import (
    ComparesAggregates,
    DropsStartedFixtureRuns,
    EchoesRefusedId,
    HidesFromDiscovery,
    IgnoresFixtureRuns,
    ServesAnyMajor,
    TellsForeignTenant,
)
from ._proxy import Behaviour, proxy_app
from ._servers import TENANT_A, TENANT_B, Host, serve_in_thread

R = "openwop.requirement."
RECORDED = "openwop.scenario.v2-eval-recorded-fixtures"
REGRESSION = "openwop.scenario.v2-eval-regression-baseline"


def _ids(*names: str) -> frozenset[str]:
    return frozenset(n if n.startswith("openwop.") else R + n for n in names)


@dataclass(frozen=True)
class Case:
    behaviour: Callable[[Host], Behaviour]
    failing: frozenset[str]
    """Exactly the legs that must turn executed-fail."""
    leg_under_test: str
    observed: str
    """A fragment of the leg's detail: what it saw."""


CASES = {
    "ignores-fixtureRuns": Case(
        lambda _host: IgnoresFixtureRuns(),
        # Dropped everywhere: the replay and drift run live, and every refusal is a 201.
        _ids(
            "0252.source-replayed",
            "0252.drift-fails-closed",
            "0252.source-refused",
            "0252.source-uniform",
            "0252.fields-refused",
            RECORDED,
        ),
        R + "0252.source-replayed",
        "live counter 'conformance-recorded' after the replay",
    ),
    "echoes-the-refused-id": Case(
        lambda _host: EchoesRefusedId(),
        _ids(
            "0252.source-refused",
            "0252.source-uniform",
            "0251.baseline-uniform",
            RECORDED,
            REGRESSION,
        ),
        R + "0252.source-refused",
        "the body echoes the supplied id",
    ),
    "tells-another-tenant's-run-apart": Case(
        lambda host: TellsForeignTenant(tenant_of_key={host.key_a: TENANT_A, host.key_b: TENANT_B}),
        _ids("0252.source-uniform", "0251.baseline-uniform", RECORDED, REGRESSION),
        R + "0252.source-uniform",
        "(other tenant)",
    ),
    "compares-aggregates": Case(
        lambda _host: ComparesAggregates(),
        _ids("0244.regression-paired-verdict", REGRESSION),
        R + "0244.regression-paired-verdict",
        "regression.verdict: expected unchanged, observed improved",
    ),
    "drops-eval.started.fixtureRuns": Case(
        lambda _host: DropsStartedFixtureRuns(),
        _ids("0252.source-replayed", RECORDED),
        R + "0252.source-replayed",
        "eval.started.fixtureRuns: expected",
    ),
    "serves-major-3-as-2": Case(
        lambda _host: ServesAnyMajor(),
        _ids("versioning.406"),
        R + "versioning.406",
        "status for OpenWOP-Version: 3: expected 406, observed 200",
    ),
}


def _through(host: Host, behaviour: Behaviour) -> Report:
    with serve_in_thread(proxy_app(host.base_url, behaviour)) as url:
        report = run_conformance(Target(url, host.key_a, host.key_b))
    # Requests a faulty host accepted instead of refusing leave runs going; the next case must
    # not see them move the counter.
    host.settle()
    return report


@pytest.mark.parametrize("name", list(CASES))
def test_a_misbehaving_host_fails_exactly_the_legs_that_watch_it(host: Host, name: str) -> None:
    case = CASES[name]
    report = _through(host, case.behaviour(host))
    dispositions = {r.id: r.disposition for r in report.results}
    failing = {i for i, d in dispositions.items() if d is Disposition.EXECUTED_FAIL}
    assert failing == case.failing, [r for r in report.results if r.id in failing ^ case.failing]
    others = {i: d for i, d in dispositions.items() if i not in case.failing}
    assert set(others.values()) == {Disposition.EXECUTED_PASS}
    detail = next(r.detail for r in report.results if r.id == case.leg_under_test)
    assert dispositions[case.leg_under_test] is Disposition.EXECUTED_FAIL
    assert case.observed in detail
    assert not report.ok


def _skipped(report: Report) -> dict[str, str]:
    return {r.id: r.detail for r in report.results if r.disposition is Disposition.SKIPPED}


def test_a_host_without_recorded_fixtures_skips_the_0252_host_legs(host: Host) -> None:
    report = _through(host, HidesFromDiscovery(members=("recordedFixtures",)))
    skipped = _skipped(report)
    assert set(skipped) == _ids(
        "0252.source-replayed",
        "0252.drift-fails-closed",
        "0252.source-refused",
        "0252.source-uniform",
        "0252.fields-refused",
        RECORDED,
    )
    assert skipped[R + "0252.source-replayed"] == (
        "agents.evalSuite does not advertise recordedFixtures"
    )
    # The server-free leg still runs, and skipped legs do not fail the run.
    assert next(r for r in report.results if r.id == R + "0252.shape").disposition is (
        Disposition.EXECUTED_PASS
    )
    assert report.ok


def test_a_host_without_the_regression_fixtures_skips_the_0251_host_legs(host: Host) -> None:
    report = _through(host, HidesFromDiscovery(fixtures=(CANDIDATE,)))
    skipped = _skipped(report)
    assert set(skipped) == _ids(
        "0251.baseline-accepted",
        "0251.score-delta",
        "0244.regression-paired-verdict",
        "0251.fields-refused",
        "0251.baseline-uniform",
        REGRESSION,
    )
    assert skipped[R + "0251.score-delta"] == f"discovery fixtures lacks {CANDIDATE}"
    assert report.ok


def test_a_host_without_regression_verdict_skips_only_the_paired_verdict(host: Host) -> None:
    report = _through(host, HidesFromDiscovery(members=("regressionVerdict",)))
    assert _skipped(report) == {
        R + "0244.regression-paired-verdict": (
            "agents.evalSuite does not advertise regressionVerdict"
        ),
        REGRESSION: "skipped: 0244.regression-paired-verdict",
    }
