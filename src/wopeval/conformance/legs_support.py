"""What the legs share: the fixture ids, the runs several legs read, and the refusal checks.

The shared runs (the source run, the regression base and candidate, tenant B's
copies) are made once per conformance run, the first time a leg asks, so
`--only` can pick any leg and still get what it stands on. A shared run that
could not be made is remembered as such and fails every leg that needs it with
the same observed reason, instead of being retried.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from openwop_client import CreateRunRequest, project_id

from wopeval.conformance.results import LegBlocked, LegOutcome, LegSkipped, observed
from wopeval.conformance.session import CompletedRun, RawResponse, Session

# The seeded fixtures both scenarios are gated on (conformance/fixtures.md).
SOURCE = "conformance-eval-recorded-source"
REPLAY = "conformance-eval-recorded-replay"
DRIFT = "conformance-eval-recorded-drift"
BASE = "conformance-eval-regression-base"
CANDIDATE = "conformance-eval-regression-candidate"
NOOP = "conformance-noop"
RECORD_TASK = "record"
"""The one task of the three recorded-fixture suites."""
RECORDED_KEYS = ("conformance-recorded", "conformance-recorded-drift")
"""The counter keys the recorded suites touch (the source's, and the drift's `inc`)."""

LegFunction = Callable[["Context"], str]


def requirement(slug: str) -> str:
    return f"openwop.requirement.{slug}"


@dataclass(frozen=True, slots=True)
class Leg:
    id: str
    run: LegFunction


@dataclass
class Context:
    """A session plus the runs several legs read."""

    session: Session
    _shared: dict[str, CompletedRun | LegOutcome] = field(default_factory=dict)

    def _once(self, name: str, make: Callable[[], CompletedRun]) -> CompletedRun:
        if name not in self._shared:
            try:
                self._shared[name] = make()
            except LegOutcome as outcome:
                self._shared[name] = outcome
        found = self._shared[name]
        if isinstance(found, LegOutcome):
            raise type(found)(f"{name}: {found.detail}")
        return found

    # ── gating (the RFCs' Conformance sections) ────────────────────

    def eval_facet(self) -> dict[str, Any]:
        agents = self.session.discovery().get("agents")
        facet = agents.get("evalSuite") if isinstance(agents, dict) else None
        if not isinstance(facet, dict):
            raise LegSkipped("agents.evalSuite is not advertised")
        return facet

    def require_members(self, *members: str) -> None:
        """Skip unless every named `agents.evalSuite` member is advertised `true`."""
        facet = self.eval_facet()
        missing = [m for m in members if facet.get(m) is not True]
        if missing:
            raise LegSkipped("agents.evalSuite does not advertise " + ", ".join(missing))

    def require_modes(self, *modes: str) -> None:
        advertised = self.eval_facet().get("modes") or []
        missing = [m for m in modes if m not in advertised]
        if missing:
            raise LegSkipped("agents.evalSuite.modes lacks " + ", ".join(missing))

    def has_fixture(self, fixture_id: str) -> bool:
        fixtures = self.session.discovery().get("fixtures")
        return isinstance(fixtures, list) and fixture_id in fixtures

    def require_fixtures(self, *fixture_ids: str) -> None:
        missing = [f for f in fixture_ids if not self.has_fixture(f)]
        if missing:
            raise LegSkipped("discovery fixtures lacks " + ", ".join(missing))

    # ── request builders ─────────────────────────────────────────────

    def eval_request(self, suite_ref: str, **extra: Any) -> CreateRunRequest:
        return CreateRunRequest(
            mode="eval", evalSuiteRef=suite_ref, agentId=self.session.target.agent_id, **extra
        )

    def eval_body(self, suite_ref: str, **extra: Any) -> dict[str, Any]:
        body: dict[str, Any] = {
            "mode": "eval",
            "evalSuiteRef": suite_ref,
            "agentId": self.session.target.agent_id,
        }
        body.update(extra)
        return body

    # ── shared runs ──────────────────────────────────────────────────

    def source_run(self) -> CompletedRun:
        return self._once("the source run", lambda: self.session.run(self.eval_request(SOURCE)))

    def base_run(self) -> CompletedRun:
        return self._once("the base run", lambda: self.session.run(self.eval_request(BASE)))

    def candidate_run(self) -> CompletedRun:
        def make() -> CompletedRun:
            request = self.eval_request(
                CANDIDATE, evalModes=["golden", "regression"], baselineRunId=self.base_run().run_id
            )
            return self.session.run(request)

        return self._once("the candidate run", make)

    def noop_run(self) -> CompletedRun:
        return self._once(
            "the conformance-noop run",
            lambda: self.session.run(CreateRunRequest(workflowId=NOOP)),
        )

    def tenant_b_source_run(self) -> CompletedRun:
        self.session.client_b()  # blocks the leg, not the shared run, without a tenant-B key
        return self._once(
            "tenant B's source run",
            lambda: self._in_tenant_b(self.eval_request(SOURCE), self.source_run()),
        )

    def tenant_b_base_run(self) -> CompletedRun:
        self.session.client_b()
        return self._once(
            "tenant B's base run",
            lambda: self._in_tenant_b(self.eval_request(BASE), self.base_run()),
        )

    def _in_tenant_b(self, request: CreateRunRequest, tenant_a_run: CompletedRun) -> CompletedRun:
        completed = self.session.run(request, tenant_b=True)
        # The cross-tenant legs mean nothing when both keys resolve to one tenant.
        if completed.tenant == tenant_a_run.tenant:
            raise LegBlocked(f"the tenant-B key resolves to tenant A's tenant {completed.tenant!r}")
        return completed


def id_forms(run_id: str) -> tuple[str, ...]:
    """Every way a body could carry the id: bound, path-projected, or its opaque part alone."""
    opaque = run_id.split("/", 1)[-1]
    return tuple(dict.fromkeys((run_id, project_id(run_id), opaque)))


def refusal_problems(what: str, answer: RawResponse, hidden: Sequence[str] = ()) -> list[str]:
    """`400 validation_error`, and none of the `hidden` ids anywhere in the body."""
    problems: list[str] = []
    if answer.status != 400 or answer.error_code != "validation_error":
        problems.append(
            f"{what}: expected 400 validation_error, observed {answer.status} "
            f"{observed(answer.body)}"
        )
    for run_id in hidden:
        if any(form.encode() in answer.body for form in id_forms(run_id)):
            problems.append(f"{what}: the body echoes the supplied id: {observed(answer.body)}")
    return problems


def tool_outcomes(run: CompletedRun) -> list[tuple[Any, Any]]:
    """`(toolName, outcome)` of every `agent.tool-returned`, in sequence order."""
    return [
        (p.get("toolName"), p.get("outcome"))
        for p in run.payloads("agent.tool-returned")
        if isinstance(p, dict)
    ]


def fixture_miss_count(summary: dict[str, Any]) -> int | None:
    """The summary's `fixtureMissCount` (root), else the sum over its tasks, else None."""
    root = summary.get("fixtureMissCount")
    if isinstance(root, int):
        return root
    counts = [t.get("fixtureMissCount") for t in summary.get("tasks") or [] if isinstance(t, dict)]
    if counts and all(isinstance(c, int) for c in counts):
        return sum(c for c in counts if isinstance(c, int))
    return None
