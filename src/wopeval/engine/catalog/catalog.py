"""What a host can run: agents, tools, graders, workflows and suites, seeded or from the project."""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources

from wopeval import evals
from wopeval.agents import SCRIPTED_AGENT_ID, AgentRegistry, AgentSpec, ScriptedAgent
from wopeval.engine.catalog.graders import CustomGrader
from wopeval.engine.catalog.judges import Judge
from wopeval.engine.recording.redaction import Redactor
from wopeval.tools import ToolRegistry
from wopeval.wire.json_text import JsonObject
from wopeval.wire.suite import Suite, parse_suite
from wopeval.wire.workflows import Workflow


@dataclass(frozen=True)
class GlobalSuite:
    """A suite every tenant can run: seeded, or loaded from the project directory."""

    fixture_id: str | None
    document: JsonObject

    @property
    def suite_id(self) -> str:
        return str(self.document["suiteId"])

    @property
    def version(self) -> str:
        return str(self.document["version"])


@dataclass(frozen=True, eq=False)
class KeptSuite:
    """A suite version parsed here, with what every eval run of it needs made once.

    Compared and hashed as itself (`eq=False`): what the eval plans make of a version once
    is kept by this object (eval_plan.py `_MADE`), so it goes with it."""

    suite: Suite
    document: JsonObject
    """The document as stored."""
    text: str | None
    """The JSON text the document was stored as, when this host wrote it (publishing it):
    an eval run's plan embeds the suite as that text (`StoredPlan.written`) instead of
    writing the whole suite again. A published version never changes, so the text is the
    document's however it was read since. None for a version only read back from the
    store: its plan writes it as before. Kept decoded (the plan's column binds text):
    decoding ~2 MB cost every create ~1 ms."""
    fixture_indexes: Mapping[str, evals.FixtureIndex]
    """By task id: the fixture index of each task that has fixtures. A version never
    changes, so its indexes are written once, here, and read by every trial of every run
    of it (each trial's consumption is its own cursor's)."""

    @classmethod
    def of(cls, suite: Suite, document: JsonObject, text: bytes | None = None) -> KeptSuite:
        indexes = {
            task.taskId: evals.FixtureIndex(
                task.fixtures.toolResponses or (), task.fixtures.on_miss
            )
            for task in suite.tasks
            if task.fixtures is not None
        }
        for task in suite.tasks:
            # Dumped now, with the version (`Task.expected_document` keeps it): every trial
            # of every run of it holds that one document rather than dumping it again.
            _ = task.expected_document
        return cls(suite, document, None if text is None else text.decode(), indexes)


class ParsedSuites:
    """Suite versions already validated, by (owner, suiteId, version), with their documents,
    their fixture indexes and, for a version published here, the document's JSON text as
    stored; least recently used go.

    A published version never changes (a different document is refused) and is never
    deleted, so a version parsed once serves every later run of it without validating
    again, and without reading its document from the store again (`document`). One
    evicted, or lost with a restart, is parsed again from the store at its next run.
    """

    def __init__(self, limit: int = 256) -> None:
        self._limit = limit
        self._suites: OrderedDict[tuple[str, str, str], KeptSuite] = OrderedDict()

    def get(self, owner: str, document: JsonObject) -> KeptSuite:
        key = (owner, str(document.get("suiteId")), str(document.get("version")))
        kept = self._suites.get(key)
        if kept is None:
            return self.keep(owner, parse_suite(document), document)
        self._suites.move_to_end(key)
        return kept

    def keep(
        self, owner: str, suite: Suite, document: JsonObject, text: bytes | None = None
    ) -> KeptSuite:
        """Keep a version just validated, with its document as stored (and its text, when
        it was written here: `text`)."""
        key = (owner, suite.suiteId, suite.version)
        kept = self._suites[key] = KeptSuite.of(suite, document, text)
        self._suites.move_to_end(key)
        if len(self._suites) > self._limit:
            self._suites.popitem(last=False)
        return kept

    def document(self, owner: str, suite_id: str, version: str) -> JsonObject | None:
        """The document of a version parsed here before, if it still is kept."""
        kept = self._suites.get((owner, suite_id, version))
        return None if kept is None else kept.document


@dataclass
class Catalog:
    agents: AgentRegistry = field(default_factory=AgentRegistry)
    tools: ToolRegistry = field(default_factory=ToolRegistry)
    workflows: dict[str, Workflow] = field(default_factory=dict)
    suites: list[GlobalSuite] = field(default_factory=list)
    fixture_ids: list[str] = field(default_factory=list)
    parsed_suites: ParsedSuites = field(default_factory=ParsedSuites)
    graders: dict[str, CustomGrader] = field(default_factory=dict)
    """The project's custom graders by id (seeded suites use none)."""
    judges: dict[str, Judge] = field(default_factory=dict)
    """The project's rubric judges by id (engine/catalog/judges.py)."""
    calibration_floor: evals.CalibrationFloor = field(default_factory=evals.CalibrationFloor)
    """What a `gate = true` judge's calibration must clear (`[calibration]`)."""
    prices: dict[str, evals.ModelPrice] = field(default_factory=dict)
    """The project's model price table (`[models."<id>"]`), by model id."""
    redactor: Redactor = field(default_factory=Redactor)
    """Redacts the project's configured secrets from what its agents say
    (engine/recording/redaction.py)."""

    def add_grader(self, grader: CustomGrader) -> None:
        if grader.grader_id in self.graders:
            raise ValueError(f"grader {grader.grader_id!r} is defined twice")
        self.graders[grader.grader_id] = grader

    def add_workflow(self, workflow: Workflow) -> None:
        if workflow.id in self.workflows:
            raise ValueError(f"workflow {workflow.id!r} is defined twice")
        self.workflows[workflow.id] = workflow

    def add_suite(self, suite: GlobalSuite) -> None:
        for known in self.suites:
            if (known.suite_id, known.version) == (suite.suite_id, suite.version):
                raise ValueError(f"suite {suite.suite_id}@{suite.version} is defined twice")
            if suite.fixture_id and known.fixture_id == suite.fixture_id:
                raise ValueError(f"suite fixture {suite.fixture_id!r} is defined twice")
        self.suites.append(suite)

    def suite_by_fixture(self, fixture_id: str) -> GlobalSuite | None:
        return next((s for s in self.suites if s.fixture_id == fixture_id), None)

    def suite_by_version(self, suite_id: str, version: str) -> GlobalSuite | None:
        return next(
            (s for s in self.suites if (s.suite_id, s.version) == (suite_id, version)), None
        )


def seed_conformance(catalog: Catalog) -> None:
    """The conformance fixtures of docs/design.md §4, listed in discovery `fixtures`."""
    catalog.agents.add(
        AgentSpec(
            SCRIPTED_AGENT_ID,
            ScriptedAgent(),
            lane="scripted",
            description="Makes the calls its input lists, in order, then decides the answer.",
        )
    )
    folder = resources.files("wopeval.conformance").joinpath("fixtures")
    for entry in sorted(folder.iterdir(), key=lambda item: item.name):
        if not entry.name.endswith(".json"):
            continue
        fixture_id = entry.name.removesuffix(".json")
        fixture = json.loads(entry.read_text(encoding="utf-8"))
        if fixture["kind"] == "workflow":
            catalog.add_workflow(Workflow.model_validate(fixture["document"]))
        else:
            catalog.add_suite(GlobalSuite(fixture_id, fixture["document"]))
        catalog.fixture_ids.append(fixture_id)
