"""Supporting legs: discovery, version negotiation, and the RFC 0081 eval-run rules
checked on every eval run the other legs made."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from openwop_client._generated import CAPABILITY_FAMILY_KEYS

from wopeval.conformance import shapes
from wopeval.conformance.legs_support import BASE, Context, Leg, requirement
from wopeval.conformance.results import Checks, LegFailed, observed
from wopeval.conformance.session import CompletedRun

# capabilities.md §3.1: the closed root's metadata keys; everything else is a family record.
METADATA_KEYS = frozenset({
    "protocolVersion", "protocolVersions", "preferredVersion", "extensions", "implementation",
    "engineVersion", "eventLogSchemaVersion", "configurable", "observability", "minClientVersion",
    "runtimeCapabilities", "testing", "conformance", "fixtures", "compliance", "discovery",
    "signingKeys",
})  # fmt: skip
EVAL_SUITE_BOOLEANS = (
    "fixtureMatching",
    "fixtureErrors",
    "regressionVerdict",
    "baselineSelection",
    "recordedFixtures",
)
_KNOWN_EVAL_MEMBERS = {"modes", "maxTasksPerSuite", "maxCostUsdPerSuite", *EVAL_SUITE_BOOLEANS}
_MINOR = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$")
_STATUSES = ("stable", "experimental", "deprecated")
_WITNESSES = (
    "witnessable-unaided", "witnessable-gated", "seam-gated", "claims-check", "negative-existence",
)  # fmt: skip
# The RFC 0081 eval-run test's content-free rule (eval-lib EVAL_CONTENT_FORBIDDEN).
FORBIDDEN_KEYS = frozenset({
    "taskOutput", "output", "rubric", "completion", "prompt", "body", "secret", "credentials",
    "token", "apiKey",
})  # fmt: skip


def discovery_shape(ctx: Context) -> str:
    document = ctx.session.discovery()
    checks = Checks()
    families = frozenset(CAPABILITY_FAMILY_KEYS)
    unknown = sorted(k for k in document if k not in METADATA_KEYS and k not in families)
    checks.expect(not unknown, f"the v2 root is closed; unknown keys {unknown}")
    versions = document.get("protocolVersions")
    if checks.expect(
        isinstance(versions, list)
        and bool(versions)
        and all(isinstance(v, str) and _MINOR.match(v) for v in versions),
        f"protocolVersions must be a non-empty list of <major>.<minor>: {observed(versions)}",
    ):
        checks.expect(
            isinstance(versions, list) and document.get("preferredVersion") in versions,
            f"preferredVersion {document.get('preferredVersion')!r} is not in protocolVersions",
        )
    for key in sorted(families & document.keys()):
        checks.extend(_record_problems(key, document[key]))
    fixtures = document.get("fixtures", [])
    checks.expect(
        isinstance(fixtures, list)
        and all(isinstance(f, str) and f for f in fixtures)
        and len(set(fixtures)) == len(fixtures),
        f"fixtures must be unique non-empty strings: {observed(fixtures)}",
    )
    agents = document.get("agents")
    facet = agents.get("evalSuite") if isinstance(agents, dict) else None
    if isinstance(facet, dict):
        checks.extend(_eval_suite_problems(facet))
        extra = sorted(set(facet) - _KNOWN_EVAL_MEMBERS)
        if extra:
            checks.note(f"evalSuite members this suite does not know: {extra}")
        checks.note(f"agents.evalSuite {observed(facet)}")
    else:
        checks.note("agents.evalSuite is not advertised")
    checks.note(f"protocolVersions {versions}; {len(fixtures)} fixtures")
    return checks.done()


def _record_problems(key: str, record: Any) -> list[str]:
    if not isinstance(record, dict):
        return [f"{key} must be a capability record, got {observed(record)}"]
    problems = []
    status = record.get("status")
    if status not in _STATUSES:
        problems.append(f"{key}.status {status!r} is not one of {_STATUSES}")
    if not isinstance(record.get("since"), str) or not _MINOR.match(record["since"]):
        problems.append(f"{key}.since {record.get('since')!r} is not <major>.<minor>")
    if record.get("witness") not in _WITNESSES:
        problems.append(f"{key}.witness {record.get('witness')!r} is not a witness class")
    if ("until" in record) != (status != "stable"):
        problems.append(f"{key}.until is required for experimental/deprecated, forbidden if stable")
    return problems


def _eval_suite_problems(facet: dict[str, Any]) -> list[str]:
    problems = [
        f"agents.evalSuite.modes: {p}" for p in shapes.eval_modes_problems(facet.get("modes"))
    ]
    tasks = facet.get("maxTasksPerSuite")
    if tasks is not None and (not isinstance(tasks, int) or isinstance(tasks, bool) or tasks < 1):
        problems.append(f"agents.evalSuite.maxTasksPerSuite {tasks!r} is not an integer >= 1")
    for member in EVAL_SUITE_BOOLEANS:
        if member in facet:
            problems.extend(
                f"agents.evalSuite.{member}: {p}"
                for p in shapes.boolean_member_problems(facet[member])
            )
    # RFC 0252 §A: recordedFixtures MUST come with fixtureMatching.
    if facet.get("recordedFixtures") is True and facet.get("fixtureMatching") is not True:
        problems.append("agents.evalSuite.recordedFixtures is advertised without fixtureMatching")
    return problems


def versioning_406(ctx: Context) -> str:
    """versioning.md §1.1: a major the host does not list → 406 with details.protocolVersions."""
    listed = ctx.session.discovery().get("protocolVersions")
    answer = ctx.session.raw_get("/.well-known/openwop", version="3", authenticated=False)
    checks = Checks()
    decoded = answer.json()
    checks.equal("status for OpenWOP-Version: 3", answer.status, 406)
    checks.equal("error", answer.error_code, "protocol_version_unsupported")
    details = decoded.get("details") if isinstance(decoded, dict) else None
    checks.equal(
        "details.protocolVersions",
        details.get("protocolVersions") if isinstance(details, dict) else None,
        listed,
    )
    checks.expect("openwop-version" in answer.headers, "the 406 carries no OpenWOP-Version header")
    checks.note(f"406 {observed(answer.body)}")
    return checks.done()


def _eval_runs(ctx: Context) -> list[CompletedRun]:
    """The eval runs made so far; when none (e.g. under --only), one run of the base fixture."""
    if not ctx.session.eval_runs:
        ctx.eval_facet()
        ctx.require_fixtures(BASE)
        ctx.base_run()
    return list(ctx.session.eval_runs.values())


def eval_run_order(ctx: Context) -> str:
    runs = _eval_runs(ctx)
    checks = Checks()
    for run in runs:
        checks.extend([f"{run.run_id}: {p}" for p in _order_problems(run)])
    checks.note(
        f"{len(runs)} eval runs: one eval.started, one eval.scored per task, "
        "one eval.completed before run.completed"
    )
    return checks.done()


def _order_problems(run: CompletedRun) -> list[str]:
    types = [e.type for e in run.events]
    started = [i for i, t in enumerate(types) if t == "eval.started"]
    scored = [i for i, t in enumerate(types) if t == "eval.scored"]
    completed = [i for i, t in enumerate(types) if t == "eval.completed"]
    if len(started) != 1 or len(completed) != 1:
        return [f"{len(started)} eval.started and {len(completed)} eval.completed (want 1 each)"]
    problems = []
    if any(not started[0] < i < completed[0] for i in scored):
        problems.append("an eval.scored outside eval.started … eval.completed")
    if "run.completed" not in types or types.index("run.completed") < completed[0]:
        problems.append(
            f"eval.completed is not followed by run.completed (terminal {run.terminal})"
        )
    final = run.events[completed[0]].payload
    task_count = final.get("taskCount") if isinstance(final, dict) else None
    if task_count != len(scored):
        problems.append(f"{len(scored)} eval.scored but eval.completed.taskCount {task_count!r}")
    payloads = [run.events[i].payload for i in scored]
    ids = [p.get("taskId") for p in payloads if isinstance(p, dict)]
    if len(set(ids)) != len(scored):
        problems.append(f"eval.scored taskIds are not one per task: {ids}")
    for p in payloads:
        score = p.get("score") if isinstance(p, dict) else None
        valid = isinstance(score, int | float) and not isinstance(score, bool) and 0 <= score <= 1
        if not valid or not isinstance(p.get("passed"), bool):
            problems.append(
                f"eval.scored needs 0 <= score <= 1 and a boolean passed: {observed(p)}"
            )
    return problems


def content_free(ctx: Context) -> str:
    runs = _eval_runs(ctx)
    checks = Checks()
    for run in runs:
        for event in run.events:
            if event.type.startswith("eval."):
                found = sorted(set(_keys(event.payload)) & FORBIDDEN_KEYS)
                checks.expect(not found, f"{run.run_id} {event.type} carries {found}")
        for task in ctx.session.summary(run.run_id).get("tasks") or []:
            found = sorted(set(_keys(task)) & FORBIDDEN_KEYS)
            checks.expect(not found, f"{run.run_id} summary task carries {found}")
    if not runs:
        raise LegFailed("no eval run to inspect")
    checks.note(f"{len(runs)} eval runs: eval.* payloads and summary tasks carry no content key")
    return checks.done()


def _keys(value: Any) -> Iterator[str]:
    """Every object key at any depth."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield str(key)
            yield from _keys(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _keys(inner)


LEGS = (
    Leg(requirement("discovery.shape"), discovery_shape),
    Leg(requirement("versioning.406"), versioning_406),
)
RUN_LEGS = (
    Leg(requirement("0081.eval-run-order"), eval_run_order),
    Leg(requirement("0081.content-free"), content_free),
)
"""Run last: they inspect every eval run the other legs made."""
