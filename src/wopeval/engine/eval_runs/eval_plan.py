"""Resolve, then run (G6): an eval createRun becomes a frozen plan before anything executes.

The order follows docs/design.md §2: gates and field rules first, the run lookups
(baseline, fixture sources) last, each through one refusal path.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any, NamedTuple
from weakref import WeakKeyDictionary

from wopeval import evals
from wopeval.agents import AgentSpec
from wopeval.engine.catalog.catalog import Catalog, KeptSuite
from wopeval.engine.catalog.graders import CustomGrader
from wopeval.engine.catalog.judges import judge_for
from wopeval.engine.eval_runs.calibration import judge_standing
from wopeval.engine.eval_runs.judging import JudgePlan, judge_agent_id, judge_fixtures
from wopeval.engine.recording.tool_contracts import (
    NO_CONTRACT,
    RecordedTools,
    ToolContract,
    load_tool_contracts,
)
from wopeval.settings import EvalFeatures
from wopeval.store import RunHandle, StoredPlan, UnitOfWork
from wopeval.wire import errors, json_text
from wopeval.wire.eval_options import EvalMode, ToolsChangedPolicy
from wopeval.wire.runs import CreateRunRequest, RunKind
from wopeval.wire.suite import OnMiss, Suite, Task, ToolResponse, parse_suite
from wopeval.wire.summary import EvalSummary

# One message each, never carrying the id: every unusable baseline or source gets
# the same status, code and body bytes (RFC 0251 §C, RFC 0252 §C).
UNUSABLE_BASELINE = "baselineRunId does not name a usable baseline run."
UNUSABLE_SOURCE = "fixtureRuns names a run that cannot serve as a fixture source."
UNUSABLE_JUDGE_SOURCE = "judgeSourceRunId does not name a run of this host."
JUDGE_COPY = "#judge"
"""The derived-copy row (`derived_fixtures`) of the judge source's judgements: no task id
has a `#`. Kept there, not in the plan, so erasing the source erases the copy too."""
JUDGE_EXTENSION = "wopeval"
"""`configurable.extensions.wopeval.judgeSourceRunId`: the run whose recorded judgements an
eval replays (docs/graders.md, "Its replay"); by default its baseline."""


@dataclass(frozen=True)
class TaskPlan:
    task: Task
    trials: int
    policy: evals.PassPolicy
    served: tuple[ToolResponse, ...] | None
    """The suite's entries for this task, or a stored copy's (None: see `fixtures`)."""
    on_miss: OnMiss
    source_run_id: str | None = None
    model_fixtures: tuple[evals.ModelFixture, ...] | None = None
    """Model replay: the source's recorded answers; None means the model runs live."""
    derived_documents: str | None = None
    """With a source derived at create: the derived entries as the JSON text of the documents
    the run's derived copy stores (kept as text: the create only copies them)."""
    tools: ToolContract = NO_CONTRACT
    """What the task does with the MCP listings its source recorded."""
    kept_index: evals.FixtureIndex | None = None
    """The fixture index of the suite version as kept (`KeptSuite.fixture_indexes`), when
    the task is served the suite's own entries from a kept version."""

    @cached_property
    def recorded_tools(self) -> RecordedTools | None:
        """What the task's boundary serves of them (one holder for all its trials)."""
        return RecordedTools(self.tools.served) if self.tools.served else None

    @cached_property
    def fixtures(self) -> tuple[ToolResponse, ...] | None:
        """The entries served to this task; None means every call runs live.

        Those derived at create are built here, at the task's first trial: the create
        (whose 201 the caller waits on) needs only their documents.
        """
        if self.served is None and self.derived_documents is not None:
            return tuple(evals.fixtures_of(json_text.parse(self.derived_documents)))
        return self.served

    @cached_property
    def fixture_index(self) -> evals.FixtureIndex | None:
        """What the task's cursors select from: the kept version's index, made once for
        every run of it, or else (entries derived from a source run, a plan rebuilt from
        its stored form) one made for this run, at its first trial."""
        if self.kept_index is not None:
            return self.kept_index
        fixtures = self.fixtures
        return None if fixtures is None else evals.FixtureIndex(fixtures, self.on_miss)


class TaskPlans(tuple[TaskPlan, ...]):
    """A run's task plans in the suite's order, with what the run reads across them all made
    at its first read: a version's plans for runs without a fixture source are one object
    shared by every such run of it (`_VersionMade`), so each is made once for all of them.
    Only read: a plan holds nothing of a run."""

    @cached_property
    def pairs(self) -> tuple[tuple[str, int], ...]:
        """Every `(task_id, trial)` a run of them executes, task by task."""
        return tuple((plan.task.taskId, trial) for plan in self for trial in range(plan.trials))

    @cached_property
    def trial_count(self) -> int:
        return sum(plan.trials for plan in self)

    @cached_property
    def by_task(self) -> Mapping[str, TaskPlan]:
        return MappingProxyType({plan.task.taskId: plan for plan in self})

    @cached_property
    def contracts(self) -> Mapping[str, ToolContract]:
        """The tool contracts of the tasks that have one, by task id."""
        return MappingProxyType(
            {plan.task.taskId: plan.tools for plan in self if plan.tools != NO_CONTRACT}
        )

    @cached_property
    def sourced(self) -> tuple[TaskPlan, ...]:
        """The plans of the tasks whose fixtures come from a source run."""
        return tuple(plan for plan in self if plan.source_run_id is not None)


@dataclass(frozen=True)
class EvalPlan:
    suite: Suite
    suite_document: dict[str, Any]
    """The document as stored: the run keeps it as it ran, without a re-serialisation."""
    agent: AgentSpec
    modes: tuple[EvalMode, ...]
    tasks: TaskPlans
    baseline_run_id: str | None = None
    baseline_summary: EvalSummary | None = None
    fixture_runs: dict[str, str] | None = None
    graders: Mapping[str, CustomGrader] = field(default_factory=dict)
    """The project's custom graders the suite names, resolved at create."""
    alpha: float = evals.DEFAULT_ALPHA
    regression_verdict: bool = True
    model_replay: bool = False
    """Tasks with a fixture source also replay its model answers (docs/llm.md)."""
    tools_changed_policy: ToolsChangedPolicy = "report"
    """`fail`: a task whose MCP tools changed since its source fails closed, unrun."""
    judge: JudgePlan | None = None
    """The judge of the suite's rubric tasks (None: the suite has none)."""
    suite_text: str | None = None
    """`suite_document`'s JSON text as it was stored, when this host wrote it
    (`KeptSuite.text`): the run's plan embeds it rather than writing the suite again."""

    def refuses(self, task_plan: TaskPlan) -> bool:
        """Whether the task fails closed: its tools changed, under `tools_changed = "fail"`."""
        return self.tools_changed_policy == "fail" and bool(task_plan.tools.changed)

    def stored(self) -> StoredPlan:
        """What the run row keeps of the plan (derived entries live in their own table):
        with the derived copies, enough for `rebuild_plan` to make the plan again."""
        # Built from what resolving the plan validated already: validating the suite document
        # again (a JSON tree of every task and its inline fixtures) cost a create tens of ms.
        return StoredPlan.model_construct(
            suite=self.suite_document,
            agentId=self.agent.agent_id,
            modes=list(self.modes),
            baselineRunId=self.baseline_run_id,
            fixtureRuns=self.fixture_runs,
            baselineSummary=self.baseline_summary,
            alpha=self.alpha,
            regressionVerdict=self.regression_verdict,
            modelReplay=self.model_replay,
            toolsChangedPolicy=self.tools_changed_policy,
            toolContracts={
                task_id: tools.stored() for task_id, tools in self.tasks.contracts.items()
            },
            judgeId=None if self.judge is None else self.judge.judge.judge_id,
            judgeSourceRunId=None if self.judge is None else self.judge.source_run_id,
            judgeLive=True if self.judge is None else self.judge.live,
            judgeAdvisory=None if self.judge is None else self.judge.advisory,
        ).with_suite_text(self.suite_text)

    def pairs(self) -> tuple[tuple[str, int], ...]:
        """Every `(task_id, trial)` the run executes, task by task."""
        return self.tasks.pairs

    @property
    def trial_count(self) -> int:
        return self.tasks.trial_count

    def task(self, task_id: str) -> TaskPlan:
        return self.tasks.by_task[task_id]

    async def keep_copies(self, uow: UnitOfWork, tenant: str, eval_run_id: str) -> None:
        """Store the derived entries with the eval run, in the transaction that creates it.

        The sources (the tasks' and, where its judgements are copied, the judge's) are
        share-locked (`RunsRepo.hold`) and checked once more in that same
        transaction: an erasure that landed since the lookup refuses the run (the same
        uniform answer) instead of leaving a copy that the erasure missed, and one that
        comes later waits for this transaction and then erases the copy with its source.
        """
        sourced = self.tasks.sourced
        sources = {plan.source_run_id for plan in sourced if plan.source_run_id is not None}
        replayed = {
            plan.source_run_id
            for plan in sourced
            if plan.source_run_id is not None and plan.model_fixtures is not None
        }
        judged = self._judge_copied()
        await uow.runs.hold(tenant, sources | ({judged[0]} if judged else set()))
        agent_id = self.agent.agent_id
        held = await uow.tool_calls.still_held(sources, agent_id)
        if held and replayed:
            held = await uow.model_calls.still_held(replayed, agent_id)
        if not held:
            raise errors.ValidationFailed(UNUSABLE_SOURCE)
        # The judgements copied were read before this transaction: an erasure of their run
        # since then would not find this copy, so it refuses the run as for a task's source.
        if judged:
            source_run_id, judge = judged
            judge_agent = judge_agent_id(judge.judge.judge_id)
            if not await uow.model_calls.still_held([source_run_id], judge_agent):
                raise errors.ValidationFailed(UNUSABLE_JUDGE_SOURCE)
        await uow.derived_fixtures.store(eval_run_id, self.derived_copies())

    def _judge_copied(self) -> tuple[str, JudgePlan] | None:
        """The run whose recorded judgements this eval run keeps a copy of, if any, with
        the judge they are of."""
        judge = self.judge
        if judge is None or judge.source_run_id is None or not judge.recorded:
            return None
        return judge.source_run_id, judge

    def derived_copies(self) -> list[dict[str, Any]]:
        return self._task_copies() + self._judge_copy()

    def _judge_copy(self) -> list[dict[str, Any]]:
        judged = self._judge_copied()
        if judged is None:
            return []
        source_run_id, judge = judged
        entries = [fixture.to_json() for fixture in judge.recorded]
        return [
            {
                "task_id": JUDGE_COPY,
                "source_run_id": source_run_id,
                "entries": [],
                "model_entries": entries,
            }
        ]

    def _task_copies(self) -> list[dict[str, Any]]:
        return [
            {
                "task_id": plan.task.taskId,
                "source_run_id": plan.source_run_id,
                "entries": json_text.embedded(plan.derived_documents),
                "model_entries": None
                if plan.model_fixtures is None
                else [fixture.to_json() for fixture in plan.model_fixtures],
            }
            for plan in self.tasks.sourced
            if plan.source_run_id is not None and plan.derived_documents is not None
        ]


@dataclass(frozen=True)
class DerivedSource:
    """A task's fixture source and what was derived from it."""

    run_id: str
    documents: str | None
    """Derived at create: the entries as the JSON text of their `toolResponses` documents
    (what the derived copy stores); None for a stored copy, whose `entries` are read."""
    entries: tuple[ToolResponse, ...] | None = None
    """Validated entries of a stored copy; None: built from `documents` when first served."""


async def resolve_eval(
    request: CreateRunRequest,
    *,
    tenant: str,
    features: EvalFeatures,
    catalog: Catalog,
    uow: UnitOfWork,
    live_tools: bool,
) -> EvalPlan:
    """`live_tools` False: an offline host, which serves the sources' recorded MCP listings."""
    _gate(request, features)
    kept, document = await _suite(request.evalSuiteRef or "", tenant, catalog, uow)
    suite = kept.suite
    made = _made_for(kept)
    agent = _agent(request.agentId or "", suite, catalog)
    made.check(features)
    # A suite pushed while the project had a grader may outlive it: refuse, naming the field.
    if not made.graders <= catalog.graders.keys():
        evals.check_known_graders(suite, catalog.graders)
    modes = evals.resolve_eval_modes(request.evalModes, suite.modes, features.modes, features.modes)
    evals.check_baseline_fields(modes, request.baselineRunId)
    evals.check_fixture_runs_fields(request.fixtureRuns, suite, modes)
    baseline = None
    if request.baselineRunId is not None:
        baseline = await load_baseline(uow, tenant, request.baselineRunId, suite.suiteId)
    fixture_runs = request.fixtureRuns or {}
    sources = await load_sources(
        uow, tenant, list(fixture_runs.values()), agent.agent_id, features.fixture_errors
    )
    derived = {
        task_id: DerivedSource(source, sources[source].documents)
        for task_id, source in fixture_runs.items()
    }
    source_runs = {task_id: sources[source].handle for task_id, source in fixture_runs.items()}
    model_replay = agent.model_replay == "recorded" or features.model_replay
    answers: dict[str, tuple[evals.ModelFixture, ...]] = {}
    if model_replay:
        for task_id, source_run in source_runs.items():
            answers[task_id] = await load_model_answers(uow, source_run, agent.agent_id)
    contracts = await load_tool_contracts(
        uow, tenant, source_runs, agent, catalog.tools, live_tools=live_tools
    )
    judge = await _judge_plan(
        request,
        suite,
        made.rubric,
        tenant,
        catalog,
        uow,
        live=live_tools and not features.model_replay,
    )
    if derived:
        tasks = _task_plans(suite, modes, derived, answers, contracts, kept.fixture_indexes)
    else:
        # With no fixture source there are no answers or contracts either (both are read
        # from the sources): the plans depend on the version and the modes alone.
        tasks = made.task_plans(live_shadow="live-shadow" in modes)
    return EvalPlan(
        suite=suite,
        suite_document=document,
        suite_text=kept.text,
        agent=agent,
        modes=modes,
        tasks=tasks,
        baseline_run_id=request.baselineRunId,
        baseline_summary=baseline,
        fixture_runs=dict(request.fixtureRuns) if request.fixtureRuns is not None else None,
        graders={name: catalog.graders[name] for name in made.graders},
        alpha=features.alpha,
        regression_verdict=features.regression_verdict,
        model_replay=model_replay,
        tools_changed_policy=features.tools_changed,
        judge=judge,
    )


async def _judge_plan(
    request: CreateRunRequest,
    suite: Suite,
    rubric: tuple[int, ...],
    tenant: str,
    catalog: Catalog,
    uow: UnitOfWork,
    *,
    live: bool,
) -> JudgePlan | None:
    """The judge of a suite with rubric tasks, with its source's recorded judgements.

    The source (`configurable.extensions.wopeval.judgeSourceRunId`, else the baseline)
    is read through one refusal path: the same answer for another tenant's run and for
    none at all. The baseline has passed its own checks already.
    """
    named = _judge_source(request)
    if not rubric:
        if named is not None:
            raise errors.ValidationFailed("judgeSourceRunId is for suites with rubric tasks.")
        return None
    judge = judge_for(catalog.judges, suite.suiteId)
    if judge is None:
        raise errors.ValidationFailed(
            f"tasks[{rubric[0]}].expected.kind: a rubric needs a judge, and this host "
            f"declares none for suite {suite.suiteId!r} ([[judges]] in wopeval.toml)."
        )
    source = named or request.baselineRunId
    recorded: tuple[evals.ModelFixture, ...] = ()
    if source is not None:
        states = await uow.runs.states(tenant, [source])
        state = states.get(source)
        if state is None:
            raise errors.ValidationFailed(UNUSABLE_JUDGE_SOURCE)
        agent_id = judge_agent_id(judge.judge_id)
        exchanges, _ = await uow.model_calls.held_exchanges(state.handle, agent_id)
        recorded = judge_fixtures(exchanges, judge.judge_id)
    # Decided once, at create: a calibration made while the run executes changes nothing.
    advisory = await judge_standing(uow, tenant, judge, catalog.calibration_floor)
    return JudgePlan(judge, recorded, source, live, advisory)


def _judge_source(request: CreateRunRequest) -> str | None:
    extensions = (request.configurable.extensions if request.configurable else None) or {}
    ours = extensions.get(JUDGE_EXTENSION) or {}
    unknown = sorted(set(ours) - {"judgeSourceRunId"})
    if unknown:
        raise errors.ValidationFailed(
            f"configurable.extensions.{JUDGE_EXTENSION}: unknown members {unknown}."
        )
    source = ours.get("judgeSourceRunId")
    if source is not None and (not isinstance(source, str) or not source):
        raise errors.ValidationFailed(
            f"configurable.extensions.{JUDGE_EXTENSION}.judgeSourceRunId must be a run id."
        )
    return source


class PlanUnavailable(Exception):
    """A stored plan cannot be made again here (its agent, grader or fixture copy is gone)."""


def rebuild_plan(
    stored: StoredPlan,
    copies: list[dict[str, Any]],
    catalog: Catalog,
    listings: Mapping[str, list[Any]],
) -> EvalPlan:
    """The plan a run was created with, from its stored form, its derived copies and the
    tool listings it serves (`listings`, by digest: see `tool_contracts.served_digests`).

    A queue worker executes runs that another process resolved: every refusal
    happened at create, so this only reassembles. The catalog must be the one the
    run was created under (the run's catalog digest says so).
    """
    document = dict(stored.suite)
    suite = parse_suite(document)
    agent = catalog.agents.get(stored.agentId)
    if agent is None:
        raise PlanUnavailable(f"agent {stored.agentId!r} is not in this catalog")
    modes = tuple(stored.modes)
    derived: dict[str, DerivedSource] = {}
    answers: dict[str, tuple[evals.ModelFixture, ...]] = {}
    judged: tuple[evals.ModelFixture, ...] = ()
    for copy in copies:
        if copy["task_id"] == JUDGE_COPY:
            # Erased since: the judge is asked again (or, offline, the trials go unjudged).
            entries = copy.get("model_entries") or []
            judged = tuple(evals.ModelFixture.from_json(entry) for entry in entries)
            continue
        if copy["entries"] is None:
            raise PlanUnavailable(f"the recorded fixtures of task {copy['task_id']!r} were erased")
        entries = tuple(ToolResponse.model_validate(entry) for entry in copy["entries"])
        derived[copy["task_id"]] = DerivedSource(copy["source_run_id"], None, entries)
        if copy.get("model_entries") is not None:
            answers[copy["task_id"]] = tuple(
                evals.ModelFixture.from_json(entry) for entry in copy["model_entries"]
            )
    missing = [name for name in evals.graders_named(suite) if name not in catalog.graders]
    if missing:
        raise PlanUnavailable(f"graders {missing} are not in this catalog")
    try:
        contracts = {
            task_id: ToolContract.from_stored(contract, listings)
            for task_id, contract in stored.toolContracts.items()
        }
    except LookupError as gone:
        raise PlanUnavailable(str(gone)) from None
    judge = None
    if stored.judgeId is not None:
        declared = catalog.judges.get(stored.judgeId)
        if declared is None:
            raise PlanUnavailable(f"judge {stored.judgeId!r} is not in this catalog")
        judge = JudgePlan(
            declared, judged, stored.judgeSourceRunId, stored.judgeLive, stored.judgeAdvisory
        )
    return EvalPlan(
        suite=suite,
        suite_document=document,
        agent=agent,
        modes=modes,
        tasks=_task_plans(suite, modes, derived, answers, contracts),
        baseline_run_id=stored.baselineRunId,
        baseline_summary=stored.baselineSummary,
        fixture_runs=stored.fixtureRuns,
        graders={name: catalog.graders[name] for name in evals.graders_named(suite)},
        alpha=stored.alpha,
        regression_verdict=stored.regressionVerdict,
        model_replay=stored.modelReplay,
        tools_changed_policy=stored.toolsChangedPolicy,
        judge=judge,
    )


def _gate(request: CreateRunRequest, features: EvalFeatures) -> None:
    # runs.md §Create: a host without agents.evalSuite refuses 422 and creates nothing.
    if not features.enabled:
        raise errors.CapabilityNotProvided("This host does not advertise agents.evalSuite.")
    # RFC 0251 §A / RFC 0252 §A: a member switched off means the property is refused.
    if not features.baseline_selection and (
        request.evalModes is not None or request.baselineRunId is not None
    ):
        raise errors.ValidationFailed("This host does not accept evalModes or baselineRunId.")
    if request.fixtureRuns is not None and not (
        features.recorded_fixtures and features.fixture_matching
    ):
        raise errors.ValidationFailed("This host does not accept fixtureRuns.")
    if not request.evalSuiteRef:
        raise errors.ValidationFailed("evalSuiteRef is required with mode 'eval'.")
    if not request.agentId:
        raise errors.ValidationFailed("agentId is required with mode 'eval'.")


_HOST_SUITE = ""
"""The owner key of a seeded or project suite in the parsed-suite cache."""


async def find_suite(
    ref: str, tenant: str, catalog: Catalog, uow: UnitOfWork
) -> dict[str, Any] | None:
    """The document a suite ref names for this tenant: its own suites first, then the host's."""
    found = await _find_owned_suite(ref, tenant, catalog, uow)
    return found[1] if found else None


async def _find_owned_suite(
    ref: str, tenant: str, catalog: Catalog, uow: UnitOfWork
) -> tuple[str, dict[str, Any]] | None:
    parsed = evals.parse_suite_ref(ref)
    if isinstance(parsed, evals.FixtureSuiteRef):
        shared = catalog.suite_by_fixture(parsed.fixture_id)
    else:
        document = catalog.parsed_suites.document(
            tenant, parsed.suite_id, parsed.version
        ) or await uow.suites.get(tenant, parsed.suite_id, parsed.version)
        if document is not None:
            return tenant, document
        shared = catalog.suite_by_version(parsed.suite_id, parsed.version)
    return (_HOST_SUITE, shared.document) if shared else None


async def _suite(
    ref: str, tenant: str, catalog: Catalog, uow: UnitOfWork
) -> tuple[KeptSuite, dict[str, Any]]:
    """The suite `ref` names, as kept parsed (with its text as published here, if it was:
    `KeptSuite.text`), and its document."""
    found = await _find_owned_suite(ref, tenant, catalog, uow)
    if found is None:
        raise errors.ValidationFailed("evalSuiteRef does not name a suite this host holds.")
    owner, document = found
    return catalog.parsed_suites.get(owner, document), document


def _agent(agent_id: str, suite: Suite, catalog: Catalog) -> AgentSpec:
    agent = catalog.agents.get(agent_id)
    if agent is None:
        raise errors.ValidationFailed("agentId does not name an agent of this host.")
    # RFC 0081 §A: a host SHOULD reject a run whose agentId differs from targetAgentId.
    if suite.targetAgentId is not None and suite.targetAgentId != agent_id:
        raise errors.ValidationFailed("agentId differs from the suite's targetAgentId.")
    return agent


class _SuiteRules(NamedTuple):
    """What of the host's features `_check_suite` applies to a suite: all it is given, so
    a version that passed under these rules is known to pass under them again."""

    max_tasks: int
    grades_rubric: bool
    fixture_errors: bool
    fixture_matching: bool

    @classmethod
    def of(cls, features: EvalFeatures) -> _SuiteRules:
        return cls(
            features.max_tasks_per_suite,
            "rubric" in features.modes,
            features.fixture_errors,
            features.fixture_matching,
        )


@dataclass(eq=False)
class _VersionMade:
    """What resolving a run of one kept suite version makes the same for every run of it:
    a version never changes, so it is made once, when the version is published here
    (`prepare_version`) or else at its first run, and read by every later run."""

    suite: Suite
    indexes: Mapping[str, evals.FixtureIndex]
    graders: frozenset[str]
    """The custom graders its tasks name."""
    rubric: tuple[int, ...]
    """The indexes of its rubric tasks."""
    passed: set[_SuiteRules] = field(default_factory=set)
    """The rules it passed `_check_suite` under (a refusal is not kept: it is raised again)."""
    plans: dict[bool, TaskPlans] = field(default_factory=dict)
    """Its task plans for a run with no fixture source, by whether the run is live-shadow
    (the one thing of the request they depend on then). A plan is immutable and holds
    nothing of a run: each trial's state is its own cursor's."""

    @classmethod
    def of(cls, kept: KeptSuite) -> _VersionMade:
        suite = kept.suite
        rubric = tuple(i for i, task in enumerate(suite.tasks) if task.expected.kind == "rubric")
        return cls(suite, kept.fixture_indexes, evals.graders_named(suite), rubric)

    def check(self, features: EvalFeatures) -> None:
        rules = _SuiteRules.of(features)
        if rules not in self.passed:
            _check_suite(self.suite, rules)
            self.passed.add(rules)

    def task_plans(self, *, live_shadow: bool) -> TaskPlans:
        plans = self.plans.get(live_shadow)
        if plans is None:
            modes: tuple[EvalMode, ...] = ("live-shadow",) if live_shadow else ()
            plans = self.plans[live_shadow] = _task_plans(
                self.suite, modes, {}, {}, {}, self.indexes
            )
        return plans


_MADE: WeakKeyDictionary[KeptSuite, _VersionMade] = WeakKeyDictionary()
"""By kept version (the object the catalog keeps, whose key is its owner's, tenant or host,
its suiteId and its version): it goes when the catalog lets the version go."""


def prepare_version(kept: KeptSuite, features: EvalFeatures) -> None:
    """Make what the runs of a version just published read, with the version (as its
    fixture indexes are): its task plans for runs that are not live-shadow, and the host's
    checks of it when it passes them (a refusal is its runs' to give)."""
    made = _made_for(kept)
    plans = made.task_plans(live_shadow=False)
    _ = plans.pairs, plans.trial_count, plans.by_task, plans.contracts, plans.sourced
    with suppress(errors.ValidationFailed):
        made.check(features)


def _made_for(kept: KeptSuite) -> _VersionMade:
    made = _MADE.get(kept)
    if made is None:
        made = _MADE[kept] = _VersionMade.of(kept)
    return made


def _check_suite(suite: Suite, rules: _SuiteRules) -> None:
    if len(suite.tasks) > rules.max_tasks:
        raise errors.ValidationFailed(
            f"The suite has {len(suite.tasks)} tasks; this host runs at most "
            f"{rules.max_tasks} (maxTasksPerSuite)."
        )
    for index, task in enumerate(suite.tasks):
        # RFC 0081 §D: a host grades rubric tasks only while it advertises the mode.
        if task.expected.kind == "rubric" and not rules.grades_rubric:
            raise errors.ValidationFailed(
                f"tasks[{index}].expected.kind: this host grades golden and trajectory tasks only."
            )
        fixtures = task.fixtures
        entries = (fixtures.toolResponses or []) if fixtures else []
        if not rules.fixture_errors and any(e.is_error for e in entries):
            raise errors.ValidationFailed(
                f"tasks[{index}].fixtures: this host does not replay tool errors (isError)."
            )
        if not rules.fixture_matching and (
            any(e.has_args or e.argsMatch for e in entries) or (fixtures and fixtures.onMiss)
        ):
            raise errors.ValidationFailed(
                f"tasks[{index}].fixtures: this host does not match fixtures by args or onMiss."
            )


def _task_plans(
    suite: Suite,
    modes: tuple[EvalMode, ...],
    derived: Mapping[str, DerivedSource],
    answers: Mapping[str, tuple[evals.ModelFixture, ...]],
    contracts: Mapping[str, ToolContract],
    indexes: Mapping[str, evals.FixtureIndex] | None = None,
) -> TaskPlans:
    """Each suite task's plan; `answers`, `contracts` and the fixture indexes of the
    version as kept (`KeptSuite.fixture_indexes`) by task id, where a task has them."""
    return TaskPlans(
        _task_plan(
            suite,
            task,
            modes,
            derived,
            answers.get(task.taskId),
            contracts.get(task.taskId, NO_CONTRACT),
            None if indexes is None else indexes.get(task.taskId),
        )
        for task in suite.tasks
    )


def _task_plan(
    suite: Suite,
    task: Task,
    modes: tuple[EvalMode, ...],
    derived: Mapping[str, DerivedSource],
    model_fixtures: tuple[evals.ModelFixture, ...] | None,
    tools: ToolContract,
    index: evals.FixtureIndex | None,
) -> TaskPlan:
    trials, policy = evals.effective_trials(suite, task), evals.effective_policy(suite, task)
    if task.taskId in derived:
        source = derived[task.taskId]
        # RFC 0252 §D: "The task runs with onMiss: fail".
        return TaskPlan(
            task,
            trials,
            policy,
            source.entries,
            "fail",
            source.run_id,
            model_fixtures=model_fixtures,
            derived_documents=source.documents,
            tools=tools,
        )
    # RFC 0081 §D: live-shadow ignores fixtures; so does a task that declares none.
    if "live-shadow" in modes or task.fixtures is None:
        return TaskPlan(
            task, trials, policy, None, "fail", model_fixtures=model_fixtures, tools=tools
        )
    if index is not None:
        # The version's own index, shared by every run of it: its entries are the task's.
        return TaskPlan(
            task,
            trials,
            policy,
            index.entries,
            index.on_miss,
            model_fixtures=model_fixtures,
            tools=tools,
            kept_index=index,
        )
    served = tuple(task.fixtures.toolResponses or ())
    on_miss = task.fixtures.on_miss
    return TaskPlan(
        task, trials, policy, served, on_miss, model_fixtures=model_fixtures, tools=tools
    )


async def load_baseline(uow: UnitOfWork, tenant: str, run_id: str, suite_id: str) -> EvalSummary:
    """RFC 0251 §C through one path: the same query and the same refusal for every reason."""
    record = await uow.runs.get(tenant, run_id)
    facts = None
    if record is not None:
        facts = evals.BaselineFacts(
            tenant=record.tenant,
            is_eval=record.kind is RunKind.EVAL,
            suite_id=record.suite_id,
            status=record.status,
            has_summary=record.summary is not None,
        )
    if record is None or not evals.is_usable_baseline(facts, tenant=tenant, suite_id=suite_id):
        raise errors.ValidationFailed(UNUSABLE_BASELINE)
    if record.summary is None:
        raise errors.ValidationFailed(UNUSABLE_BASELINE)
    return record.summary


@dataclass(frozen=True)
class UsableSource:
    """A fixture source that passed RFC 0252 §C: the handle its content is read with, and
    the documents derived from it (§D)."""

    handle: RunHandle
    documents: str
    """As `store.DerivedSource.documents`."""


async def load_sources(
    uow: UnitOfWork, tenant: str, run_ids: list[str], agent_id: str, fixture_errors: bool
) -> dict[str, UsableSource]:
    """RFC 0252 §C through one path, then §D: each usable source, by id.

    One query per table for all the sources (two of the calls: the documents the store
    writes, and the facts); the first unusable one, in the order
    given, refuses the create. Only the tenant's own runs are read past the lookup:
    another tenant's run and one that does not exist cost the same.
    """
    if not run_ids:
        return {}
    states = await uow.runs.states(tenant, run_ids)
    owned = [state.handle for state in states.values()]
    derived_sources = await uow.tool_calls.derive(owned, agent_id)
    invoked = await uow.events.invoked_agents_of(owned)
    derived: dict[str, UsableSource] = {}
    for run_id in run_ids:
        state = states.get(run_id)
        facts = None
        if state is not None:
            own = derived_sources[run_id]
            facts = evals.SourceFacts(
                tenant=tenant,
                status=state.status,
                agent_id=agent_id,
                invocation_count=invoked[run_id].count(agent_id),
                all_calls_held=own.all_held,
                has_failed_call=own.has_failed_call,
            )
        usable = evals.is_usable_source(
            facts, tenant=tenant, agent_id=agent_id, fixture_errors_enabled=fixture_errors
        )
        if state is None or not usable:
            raise errors.ValidationFailed(UNUSABLE_SOURCE)
        derived[run_id] = UsableSource(state.handle, derived_sources[run_id].documents)
    return derived


async def load_model_answers(
    uow: UnitOfWork, source: RunHandle, agent_id: str
) -> tuple[evals.ModelFixture, ...]:
    """Model replay (beyond RFC 0252 UQ 5): the source's recorded answers, derived at create.

    The source has already passed `load_source` (same tenant, usable). Its model
    exchanges must still hold their content (`record_model` on, not erased), or it
    is refused with the same uniform answer: a replay derived short would turn
    recorded answers into misses.
    """
    exchanges, all_held = await uow.model_calls.held_exchanges(source, agent_id)
    if not all_held:
        raise errors.ValidationFailed(UNUSABLE_SOURCE)
    return tuple(evals.derive_model_fixtures(exchanges, agent_id))
