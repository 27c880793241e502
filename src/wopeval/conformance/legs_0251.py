"""RFC 0251 legs: a client names an eval run's modes and its regression baseline
(scenario `v2-eval-regression-baseline`, gated on `baselineSelection`,
`regression` in `modes`, and both regression fixtures in discovery `fixtures`),
plus the RFC 0244 §F paired-verdict leg it makes witnessable.

The two fixtures share one suiteId; `base-only` fails and every other task
passes, so the aggregates differ by 1/3 while every paired score is equal. A
host that compares aggregates instead of pairing tasks calls the candidate
improved.
"""

from __future__ import annotations

from typing import Any

from wopeval.conformance import shapes
from wopeval.conformance.legs_support import (
    BASE,
    CANDIDATE,
    NOOP,
    SOURCE,
    Context,
    Leg,
    refusal_problems,
    requirement,
)
from wopeval.conformance.results import Checks, LegFailed, observed
from wopeval.conformance.session import Session

SUITE_MODES = ("golden", "regression")
"""The modes both regression fixtures declare."""
_REGRESSION = ["golden", "regression"]


def _gate(ctx: Context) -> None:
    ctx.require_members("baselineSelection")
    ctx.require_modes(*SUITE_MODES)
    ctx.require_fixtures(BASE, CANDIDATE)


def shape(_ctx: Context) -> str:
    return shapes.check_vectors("0251")


def _sdk_summary(ctx: Context, run_id: str) -> Any:
    """The summary as the official client parses it (None on 404)."""
    summary = ctx.session.client_a.runs_eval_summary(run_id)
    if summary is None:
        raise LegFailed(f"eval-summary of {run_id} answered 404")
    return summary


def baseline_accepted(ctx: Context) -> str:
    """§D: the accepted baseline is named on eval.started and on the summary's regression."""
    _gate(ctx)
    base, candidate = ctx.base_run(), ctx.candidate_run()
    regression = _sdk_summary(ctx, candidate.run_id).regression
    checks = Checks()
    started = candidate.first("eval.started")
    checks.equal("eval.started.baselineRunId", started.get("baselineRunId"), base.run_id)
    checks.extend(shapes.eval_started_problems(started))
    checks.equal(
        "summary regression.baselineRunId",
        None if regression is None else str(regression.baselineRunId),
        base.run_id,
    )
    checks.note(f"candidate {candidate.run_id} created 201 against baseline {base.run_id}")
    return checks.done()


def score_delta(ctx: Context) -> str:
    """§D: scoreDelta = this run's aggregateScore − the baseline's (+1/3 on the fixtures)."""
    _gate(ctx)
    base, candidate = ctx.base_run(), ctx.candidate_run()
    base_summary = _sdk_summary(ctx, base.run_id)
    summary = _sdk_summary(ctx, candidate.run_id)
    if summary.regression is None:
        raise LegFailed(f"the candidate summary has no regression: {observed(summary)}")
    delta = float(summary.regression.scoreDelta)
    expected = float(summary.aggregateScore) - float(base_summary.aggregateScore)
    checks = Checks()
    checks.expect(
        abs(delta - expected) <= 1e-9,
        f"scoreDelta {delta!r} is not aggregateScore − baseline's ({expected!r})",
    )
    checks.expect(abs(delta - 1 / 3) <= 1e-6, f"scoreDelta {delta!r} is not +1/3")
    completed = candidate.first("eval.completed")
    if "regressionVsBaseline" in completed:
        checks.expect(
            abs(float(completed["regressionVsBaseline"]) - delta) <= 1e-9,
            f"eval.completed.regressionVsBaseline {completed['regressionVsBaseline']!r} "
            f"differs from scoreDelta {delta!r}",
        )
    checks.note(
        f"scoreDelta {delta:.6f} = {float(summary.aggregateScore):.6f} − "
        f"{float(base_summary.aggregateScore):.6f}"
    )
    return checks.done()


def paired_verdict(ctx: Context) -> str:
    """RFC 0244 §F: pairing by taskId says `unchanged`, whatever the aggregates say."""
    _gate(ctx)
    ctx.require_members("regressionVerdict")
    summary = ctx.session.summary(ctx.candidate_run().run_id)
    regression = summary.get("regression")
    if not isinstance(regression, dict):
        raise LegFailed(f"the candidate summary has no regression: {observed(summary)}")
    checks = Checks()
    checks.equal("regression.verdict", regression.get("verdict"), "unchanged")
    checks.equal(
        "regression.baselineOnlyTaskIds", regression.get("baselineOnlyTaskIds"), ["base-only"]
    )
    checks.equal(
        "regression.candidateOnlyTaskIds",
        regression.get("candidateOnlyTaskIds"),
        ["candidate-only"],
    )
    if "pairedTaskCount" in regression:
        checks.equal("regression.pairedTaskCount", regression["pairedTaskCount"], 2)
    checks.note(
        f"verdict unchanged with scoreDelta {regression.get('scoreDelta')!r}; "
        "unpaired tasks base-only / candidate-only"
    )
    return checks.done()


def fields_refused(ctx: Context) -> str:
    """§B: each request-rule refusal is 400 validation_error."""
    _gate(ctx)
    session, base = ctx.session, ctx.base_run()
    host_modes = list(ctx.eval_facet().get("modes") or [])
    cases: list[tuple[str, dict[str, Any]]] = []
    not_run: list[str] = []
    if ctx.has_fixture(NOOP):
        cases.append(("evalModes without mode", {"workflowId": NOOP, "evalModes": ["golden"]}))
        cases.append(
            ("baselineRunId without mode", {"workflowId": NOOP, "baselineRunId": base.run_id})
        )
    else:
        not_run.append("the two without-mode cases (conformance-noop not advertised)")
    cases.append(("empty evalModes", ctx.eval_body(CANDIDATE, evalModes=[])))
    cases.append(("a repeated mode", ctx.eval_body(CANDIDATE, evalModes=["golden", "golden"])))
    outside_suite = next((m for m in host_modes if m not in SUITE_MODES), None)
    if outside_suite is not None:
        body = ctx.eval_body(CANDIDATE, evalModes=["golden", outside_suite])
        cases.append((f"{outside_suite} (outside the suite's modes)", body))
    else:
        not_run.append("a host mode outside the suite (the host advertises none)")
    outside_host = next((m for m in shapes.EVAL_MODES if m not in host_modes), None)
    if outside_host is not None:
        body = ctx.eval_body(CANDIDATE, evalModes=["golden", outside_host])
        cases.append((f"{outside_host} (not advertised by the host)", body))
    else:
        not_run.append("a mode outside the host's (it advertises all five)")
    cases.append(
        (
            "baselineRunId without regression",
            ctx.eval_body(CANDIDATE, evalModes=["golden"], baselineRunId=base.run_id),
        )
    )
    cases.append(
        ("regression without baselineRunId", ctx.eval_body(CANDIDATE, evalModes=_REGRESSION))
    )
    checks = Checks()
    for what, body in cases:
        checks.extend(refusal_problems(what, session.raw_create(body)))
    checks.note(f"refused 400 validation_error: {', '.join(what for what, _ in cases)}")
    if not_run:
        checks.note("not run: " + "; ".join(not_run))
    return checks.done()


def baseline_uniform(ctx: Context) -> str:
    """§C: every unusable baseline is refused alike; tenant B's run byte for byte like no run."""
    _gate(ctx)
    session, base = ctx.session, ctx.base_run()
    foreign = ctx.tenant_b_base_run()

    def refuse(baseline: str) -> Any:
        return session.raw_create(
            ctx.eval_body(CANDIDATE, evalModes=_REGRESSION, baselineRunId=baseline)
        )

    unknown = Session.unknown_run_id(base.tenant)
    for_unknown, for_foreign = refuse(unknown), refuse(foreign.run_id)
    checks = Checks()
    checks.extend(refusal_problems("unknown id", for_unknown, [unknown]))
    checks.extend(refusal_problems("tenant B's base run", for_foreign, [foreign.run_id]))
    checks.expect(
        (for_foreign.status, for_foreign.body) == (for_unknown.status, for_unknown.body),
        f"tenant B's run answered {for_foreign.status} {observed(for_foreign.body)} but the "
        f"unknown id {for_unknown.status} {observed(for_unknown.body)}",
    )
    # The other §C reasons, in the caller's own tenant: same status and code, no id.
    others = []
    if ctx.has_fixture(NOOP):
        others.append(("a workflow run", ctx.noop_run().run_id))
    if ctx.has_fixture(SOURCE):
        others.append(("an eval run of another suite", ctx.source_run().run_id))
    for what, run_id in others:
        checks.extend(refusal_problems(what, refuse(run_id), [run_id]))
    checks.note(f"byte-identical {for_unknown.status} bodies: {observed(for_unknown.body)}")
    if others:
        checks.note("also refused: " + ", ".join(what for what, _ in others))
    return checks.done()


LEGS = (
    Leg(requirement("0251.shape"), shape),
    Leg(requirement("0251.baseline-accepted"), baseline_accepted),
    Leg(requirement("0251.score-delta"), score_delta),
    Leg(requirement("0244.regression-paired-verdict"), paired_verdict),
    Leg(requirement("0251.fields-refused"), fields_refused),
    Leg(requirement("0251.baseline-uniform"), baseline_uniform),
)
