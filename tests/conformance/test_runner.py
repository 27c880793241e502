"""The runner: ids, `--only` selection, dispositions from outcomes, and scenario verdicts."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from openwop_client import WopError

from wopeval.conformance.legs_support import Context, Leg
from wopeval.conformance.results import (
    Disposition,
    LegBlocked,
    LegFailed,
    LegResult,
    LegSkipped,
    Report,
)
from wopeval.conformance.runner import (
    RECORDED_FIXTURES,
    REGRESSION_BASELINE,
    leg_ids,
    run_leg,
    scenario_result,
    selected,
)
from wopeval.conformance.session import Session, Target

_ID = re.compile(r"^openwop\.(requirement\.[a-z0-9]+\.[a-z0-9-]+|scenario\.[a-z0-9-]+)$")


def test_ids_are_unique_and_follow_the_grammar() -> None:
    ids = leg_ids()
    assert len(ids) == len(set(ids)) == 18
    assert [i for i in ids if not _ID.match(i)] == []
    # The RFC 0081 legs run last: they read every eval run the others made.
    assert ids[-2:] == [
        "openwop.requirement.0081.eval-run-order",
        "openwop.requirement.0081.content-free",
    ]


def test_only_filters_by_fnmatch_and_a_scenario_brings_its_legs() -> None:
    assert selected(["*0252.source-*"]) == {
        "openwop.requirement.0252.source-replayed",
        "openwop.requirement.0252.source-refused",
        "openwop.requirement.0252.source-uniform",
    }
    assert selected(["*v2-eval-regression-baseline"]) == {
        REGRESSION_BASELINE.id,
        *REGRESSION_BASELINE.legs,
    }
    assert selected([]) == set(leg_ids())


@pytest.fixture
def ctx() -> Iterator[Context]:
    # Nothing is sent: the legs below never touch the session.
    session = Session(Target("http://127.0.0.1:9", "key"))
    yield Context(session)
    session.close()


def _raises(exc: Exception) -> Leg:
    def leg(_ctx: Context) -> str:
        raise exc

    return Leg("openwop.requirement.test.leg", leg)


@pytest.mark.parametrize(
    ("exc", "disposition", "detail"),
    [
        (LegFailed("saw 2"), Disposition.EXECUTED_FAIL, "saw 2"),
        (LegSkipped("not advertised"), Disposition.SKIPPED, "not advertised"),
        (LegBlocked("no key"), Disposition.BLOCKED, "no key"),
        (
            WopError(500, '{"error":"internal_error"}', None),
            Disposition.EXECUTED_FAIL,
            'unexpected 500 from the host: {"error":"internal_error"}',
        ),
        (WopError(0, "refused", None), Disposition.EXECUTED_FAIL, "host unreachable: "),
        (
            KeyError("protocolVersions"),
            Disposition.EXECUTED_FAIL,
            "the host's answer could not be read: KeyError: 'protocolVersions'",
        ),
    ],
)
def test_run_leg_maps_outcomes_to_dispositions(
    ctx: Context, exc: Exception, disposition: Disposition, detail: str
) -> None:
    result = run_leg(_raises(exc), ctx)
    assert result.disposition is disposition
    assert result.detail.startswith(detail)


def test_a_passing_leg_reports_its_detail(ctx: Context) -> None:
    result = run_leg(Leg("openwop.requirement.test.leg", lambda _ctx: "saw 1"), ctx)
    assert result == LegResult("openwop.requirement.test.leg", Disposition.EXECUTED_PASS, "saw 1")


def _all(disposition: Disposition) -> dict[str, LegResult]:
    return {i: LegResult(i, disposition, "") for i in RECORDED_FIXTURES.legs}


def test_a_scenario_passes_only_when_every_leg_passed() -> None:
    results = _all(Disposition.EXECUTED_PASS)
    assert scenario_result(RECORDED_FIXTURES, results).disposition is Disposition.EXECUTED_PASS
    uniform = "openwop.requirement.0252.source-uniform"
    results[uniform] = LegResult(uniform, Disposition.BLOCKED, "")
    assert scenario_result(RECORDED_FIXTURES, results) == LegResult(
        RECORDED_FIXTURES.id, Disposition.BLOCKED, "blocked: 0252.source-uniform"
    )
    shape = "openwop.requirement.0252.shape"
    results[shape] = LegResult(shape, Disposition.EXECUTED_FAIL, "")
    assert scenario_result(RECORDED_FIXTURES, results).disposition is Disposition.EXECUTED_FAIL


def test_the_report_is_ok_unless_something_failed_or_blocked() -> None:
    def report(*dispositions: Disposition) -> Report:
        results = tuple(LegResult(f"x{i}", d, "") for i, d in enumerate(dispositions))
        return Report("http://h", "v", "t", results)

    assert report(Disposition.EXECUTED_PASS, Disposition.SKIPPED).ok
    assert not report(Disposition.EXECUTED_PASS, Disposition.BLOCKED).ok
    assert not report(Disposition.EXECUTED_FAIL).ok
    assert report().to_json() == {
        "host": "http://h",
        "suiteVersion": "v",
        "startedAt": "t",
        "results": [],
    }
