"""RFC 0252 legs: an eval task takes its fixtures from a recorded run (scenario
`v2-eval-recorded-fixtures`, gated on `recordedFixtures`, `fixtureMatching` and
the three recorded fixtures in discovery `fixtures`).

The live counter `conformance.eval:counter` is what makes the replay leg able
to fail: a host that ignores `fixtureRuns` answers the replay's `inc` live, so
the counter moves and the outcome differs from the source's.
"""

from __future__ import annotations

from typing import Any

from wopeval.conformance import shapes
from wopeval.conformance.legs_support import (
    DRIFT,
    NOOP,
    RECORD_TASK,
    RECORDED_KEYS,
    REPLAY,
    SOURCE,
    Context,
    Leg,
    fixture_miss_count,
    refusal_problems,
    requirement,
    tool_outcomes,
)
from wopeval.conformance.results import Checks, observed
from wopeval.conformance.session import Session

_NO_COUNTER = (
    "the host serves no counter route, so the live counter was not read: judged on the "
    "agent.tool-returned outcomes only"
)


def _gate(ctx: Context) -> None:
    ctx.require_members("recordedFixtures", "fixtureMatching")
    ctx.require_fixtures(SOURCE, REPLAY, DRIFT)


def _counters(session: Session) -> dict[str, int | None]:
    return {key: session.counter(key) for key in RECORDED_KEYS}


def _compare_counters(
    checks: Checks, before: dict[str, int | None], after: dict[str, int | None], run: str
) -> None:
    if any(value is None for value in before.values()):
        checks.note(_NO_COUNTER)
        return
    for key, value in before.items():
        checks.equal(f"live counter {key!r} after the {run}", after[key], value)
    checks.note(f"live counters unchanged by the {run} ({observed(before)})")


def shape(_ctx: Context) -> str:
    return shapes.check_vectors("0252")


def source_replayed(ctx: Context) -> str:
    """§D/§E: the replay is served the recorded answers, echoes the map, runs nothing live."""
    _gate(ctx)
    source = ctx.source_run()
    fixture_runs = {RECORD_TASK: source.run_id}
    before = _counters(ctx.session)
    replay = ctx.session.run(ctx.eval_request(REPLAY, fixtureRuns=fixture_runs))
    after = _counters(ctx.session)
    checks = Checks()
    started = replay.first("eval.started")
    checks.equal("eval.started.fixtureRuns", started.get("fixtureRuns"), fixture_runs)
    checks.extend(shapes.eval_started_problems(started))
    recorded, replayed = tool_outcomes(source), tool_outcomes(replay)
    if checks.expect(bool(recorded), "the source run emitted no agent.tool-returned"):
        checks.expect(
            all(outcome is not None for _, outcome in recorded),
            f"the source's agent.tool-returned carry no outcome: {observed(recorded)}",
        )
    checks.equal("agent.tool-returned (tool, outcome) of the replay", replayed, recorded)
    summary = ctx.session.summary(replay.run_id)
    checks.equal("replay fixtureMissCount", fixture_miss_count(summary), 0)
    _compare_counters(checks, before, after, "replay")
    checks.note(f"replay served the {len(recorded)} recorded outcomes of {source.run_id}")
    return checks.done()


def drift_fails_closed(ctx: Context) -> str:
    """§D: a call the source never made misses; no live tool runs; the task fails."""
    _gate(ctx)
    source = ctx.source_run()
    before = _counters(ctx.session)
    drift = ctx.session.run(ctx.eval_request(DRIFT, fixtureRuns={RECORD_TASK: source.run_id}))
    after = _counters(ctx.session)
    summary = ctx.session.summary(drift.run_id)
    checks = Checks()
    checks.equal("drift fixtureMissCount", fixture_miss_count(summary), 1)
    checks.equal("drift summary passed", summary.get("passed"), False)
    tasks: list[Any] = summary.get("tasks") or []
    passed = [t.get("passed") for t in tasks if isinstance(t, dict)]
    checks.equal("drift task passed", passed, [False])
    if any(value is None for value in before.values()):
        checks.note("the host serves no counter route: judged on fixtureMissCount and passed")
    else:
        _compare_counters(checks, before, after, "drift")
    checks.note("fixtureMissCount 1, passed false")
    return checks.done()


def source_refused(ctx: Context) -> str:
    """§C: an unknown id and a run that never invoked the agent → 400, without the id."""
    _gate(ctx)
    source = ctx.source_run()
    checks = Checks()
    unknown = Session.unknown_run_id(source.tenant)
    answer = ctx.session.raw_create(ctx.eval_body(REPLAY, fixtureRuns={RECORD_TASK: unknown}))
    checks.extend(refusal_problems("unknown id", answer, [unknown]))
    if ctx.has_fixture(NOOP):
        noop = ctx.noop_run()
        refused = ctx.session.raw_create(
            ctx.eval_body(REPLAY, fixtureRuns={RECORD_TASK: noop.run_id})
        )
        checks.extend(refusal_problems("a conformance-noop workflow run", refused, [noop.run_id]))
        checks.note("unknown id and a conformance-noop run refused 400 validation_error")
    else:
        checks.note("unknown id refused; conformance-noop is not advertised, so not run")
    checks.note(f"body {observed(answer.body)}")
    return checks.done()


def source_uniform(ctx: Context) -> str:
    """§C: tenant B's completed source run gets the unknown id's status, code and bytes."""
    _gate(ctx)
    source = ctx.source_run()
    foreign = ctx.tenant_b_source_run()
    unknown = Session.unknown_run_id(source.tenant)
    for_unknown = ctx.session.raw_create(ctx.eval_body(REPLAY, fixtureRuns={RECORD_TASK: unknown}))
    for_foreign = ctx.session.raw_create(
        ctx.eval_body(REPLAY, fixtureRuns={RECORD_TASK: foreign.run_id})
    )
    checks = Checks()
    checks.extend(refusal_problems("unknown id", for_unknown, [unknown]))
    checks.extend(refusal_problems("tenant B's source run", for_foreign, [foreign.run_id]))
    checks.expect(
        (for_foreign.status, for_foreign.body) == (for_unknown.status, for_unknown.body),
        f"tenant B's run answered {for_foreign.status} {observed(for_foreign.body)} but the "
        f"unknown id {for_unknown.status} {observed(for_unknown.body)}",
    )
    checks.note(f"byte-identical {for_unknown.status} bodies: {observed(for_unknown.body)}")
    return checks.done()


def fields_refused(ctx: Context) -> str:
    """§B: each request-rule refusal is 400 validation_error."""
    _gate(ctx)
    session, source = ctx.session, ctx.source_run()
    named = {RECORD_TASK: source.run_id}
    cases: list[tuple[str, dict[str, Any]]] = [
        (
            "a key naming no task",
            ctx.eval_body(REPLAY, fixtureRuns={"no-such-task": source.run_id}),
        ),
        ("fixtureRuns with no keys", ctx.eval_body(REPLAY, fixtureRuns={})),
        ("the source fixture (toolResponses) as target", ctx.eval_body(SOURCE, fixtureRuns=named)),
    ]
    skipped: list[str] = []
    if ctx.has_fixture(NOOP):
        cases.append(("fixtureRuns without mode", {"workflowId": NOOP, "fixtureRuns": named}))
    else:
        skipped.append("without mode (conformance-noop not advertised)")
    facet = ctx.eval_facet()
    # A client sends evalModes only to a host advertising baselineSelection (RFC 0251 §A).
    if facet.get("baselineSelection") is True and "live-shadow" in (facet.get("modes") or []):
        live_shadow = ctx.eval_body(REPLAY, evalModes=["live-shadow"], fixtureRuns=named)
        cases.append(("live-shadow among the run's modes", live_shadow))
    else:
        skipped.append("live-shadow (not advertised with baselineSelection)")
    checks = Checks()
    for what, body in cases:
        checks.extend(refusal_problems(what, session.raw_create(body)))
    checks.note(f"refused 400 validation_error: {', '.join(what for what, _ in cases)}")
    if skipped:
        checks.note("not run: " + ", ".join(skipped))
    return checks.done()


LEGS = (
    Leg(requirement("0252.shape"), shape),
    Leg(requirement("0252.source-replayed"), source_replayed),
    Leg(requirement("0252.drift-fails-closed"), drift_fails_closed),
    Leg(requirement("0252.source-refused"), source_refused),
    Leg(requirement("0252.source-uniform"), source_uniform),
    Leg(requirement("0252.fields-refused"), fields_refused),
)
