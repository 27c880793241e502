"""Run the conformance legs against any OpenWOP v2 host and collect one report.

The order matters only in one place: the RFC 0081 legs run last because they
inspect every eval run the other legs made. A scenario passes iff all its legs
passed; selecting a scenario with `--only` also runs (and reports) its legs,
since its verdict stands on them.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import httpx
from openwop_client import WopError
from openwop_client._generated import CORPUS_VERSION

from wopeval import __version__
from wopeval.conformance import legs_0251, legs_0252, legs_core
from wopeval.conformance.legs_support import Context, Leg
from wopeval.conformance.results import Disposition, LegOutcome, LegResult, Report, observed
from wopeval.conformance.session import Session, Target

SUITE_VERSION = f"{__version__}+openwop.{CORPUS_VERSION}"
"""This suite's version: wopeval's, built on the corpus the official client implements."""


@dataclass(frozen=True, slots=True)
class Scenario:
    id: str
    legs: tuple[str, ...]


def _scenario(name: str, legs: Sequence[Leg]) -> Scenario:
    return Scenario(f"openwop.scenario.{name}", tuple(leg.id for leg in legs))


RECORDED_FIXTURES = _scenario("v2-eval-recorded-fixtures", legs_0252.LEGS)
REGRESSION_BASELINE = _scenario("v2-eval-regression-baseline", legs_0251.LEGS)
PLAN: tuple[Leg | Scenario, ...] = (
    *legs_core.LEGS,
    *legs_0252.LEGS,
    RECORDED_FIXTURES,
    *legs_0251.LEGS,
    REGRESSION_BASELINE,
    *legs_core.RUN_LEGS,
)
"""Every leg and scenario, in the order they run and are reported."""


def leg_ids() -> list[str]:
    return [item.id for item in PLAN]


def selected(patterns: Sequence[str]) -> set[str]:
    """The ids `--only` selects (fnmatch, any pattern), plus the legs of a selected scenario."""
    if not patterns:
        return set(leg_ids())
    chosen = {i for i in leg_ids() if any(fnmatch.fnmatchcase(i, p) for p in patterns)}
    for item in PLAN:
        if isinstance(item, Scenario) and item.id in chosen:
            chosen.update(item.legs)
    return chosen


def run_leg(leg: Leg, ctx: Context) -> LegResult:
    try:
        detail = leg.run(ctx)
    except LegOutcome as outcome:
        return LegResult(leg.id, outcome.disposition, outcome.detail)
    except WopError as exc:
        if exc.status == 0:
            return LegResult(leg.id, Disposition.EXECUTED_FAIL, f"host unreachable: {exc}")
        return LegResult(
            leg.id,
            Disposition.EXECUTED_FAIL,
            f"unexpected {exc.status} from the host: {observed(exc.raw_text)}",
        )
    except httpx.HTTPError as exc:
        return LegResult(leg.id, Disposition.EXECUTED_FAIL, f"transport error: {exc!r}")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        # The official client parses strictly (a missing required field is a KeyError); one
        # malformed answer fails the leg that met it instead of ending the whole run.
        return LegResult(
            leg.id,
            Disposition.EXECUTED_FAIL,
            f"the host's answer could not be read: {type(exc).__name__}: {exc}",
        )
    return LegResult(leg.id, Disposition.EXECUTED_PASS, detail or "passed")


def scenario_result(scenario: Scenario, results: dict[str, LegResult]) -> LegResult:
    """Pass iff every leg passed; otherwise the worst member disposition, naming the legs."""
    members = [results[leg_id] for leg_id in scenario.legs]
    for disposition in (Disposition.EXECUTED_FAIL, Disposition.BLOCKED, Disposition.SKIPPED):
        hit = [
            m.id.removeprefix("openwop.requirement.")
            for m in members
            if m.disposition is disposition
        ]
        if hit:
            return LegResult(scenario.id, disposition, f"{disposition.value}: {', '.join(hit)}")
    return LegResult(
        scenario.id, Disposition.EXECUTED_PASS, f"all {len(members)} legs executed-pass"
    )


def run_conformance(
    target: Target,
    *,
    only: Sequence[str] = (),
    on_result: Callable[[LegResult], None] | None = None,
) -> Report:
    """Run the selected legs in order against `target`; `on_result` sees each result as it lands."""
    started_at = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    chosen = selected(only)
    session = Session(target)
    ctx = Context(session)
    results: dict[str, LegResult] = {}
    try:
        for item in PLAN:
            if item.id not in chosen:
                continue
            if isinstance(item, Scenario):
                result = scenario_result(item, results)
            else:
                result = run_leg(item, ctx)
            results[item.id] = result
            if on_result is not None:
                on_result(result)
    finally:
        session.close()
    return Report(target.base_url, SUITE_VERSION, started_at, tuple(results.values()))
