"""The eval suite document: RFC 0081 `AgentEvalSuite` plus this host's additions.

The RFC 0081 shape is `schemas/v2/agent-eval-suite.schema.json` (wire digest §2.1).
The additions are docs/design.md §3: fixture `args` / `argsMatch` / `isError` and
`onMiss` (RFC 0244 §D, RFC 0245, as RFC 0252 §D uses them), trials and a pass
policy, and `trajectory` expectations. Every model is closed and frozen, and
strict: a JSON document is taken as it is written, never coerced ("5" is not 5).

Absent and empty differ on purpose. An optional key that is absent reads as
`None`; a key present with a value keeps it, even `[]`. RFC 0252 §B refuses a
named task whose fixtures *carry* `toolResponses` or `onMiss`, so `toolResponses:
[]` must stay visible. To keep that reading honest, a key whose schema type is
not nullable is refused when written as `null` (see `_Closed._no_null`).
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from wopeval.wire import errors
from wopeval.wire.eval_options import EvalMode
from wopeval.wire.jsonpath import JsonPathError, parse_json_path

ArgsMatch = Literal["exact", "subset", "ignore"]
OnMiss = Literal["fail", "live"]
PassPolicyName = Literal["all", "any", "majority"]
ExpectedKind = Literal["golden", "rubric", "trajectory"]
MatchStrategy = Literal[
    "exact", "contains", "json-match", "json-subset", "json-path", "regex", "custom"
]
TrajectoryOrder = Literal["strict", "unordered", "subset", "superset"]
ModelClass = Literal["reasoning", "writing", "coding", "research", "classification", "general"]

SUITE_ID_PATTERN = r"^[a-z0-9.-]+\.evals\.[a-z0-9-]+$"
SEMVER_PATTERN = r"^[0-9]+\.[0-9]+\.[0-9]+$"
TASK_ID_PATTERN = r"^[a-z0-9][a-z0-9-]*$"
GRADER_ID_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    NULLABLE_FIELDS: ClassVar[frozenset[str]] = frozenset()
    """Fields whose value is any JSON, where `null` is a value and not an absence."""

    @field_validator("*", mode="before")
    @classmethod
    def _no_null(cls, value: object, info: ValidationInfo) -> object:
        # Refuses, never rewrites: `null` would otherwise read as "absent" (module docstring).
        if value is None and info.field_name not in cls.NULLABLE_FIELDS:
            raise PydanticCustomError("null_value", "must not be null")
        return value


class ArgsPattern(_Closed):
    """A tool name and an args pattern: shared by fixture entries and expected calls."""

    NULLABLE_FIELDS: ClassVar[frozenset[str]] = frozenset({"args"})

    tool: str = Field(min_length=1)
    """RFC 0081 §A `toolResponses[].tool`: the `<scope>:<tool-id>` the call names."""
    args: JsonValue = None
    """RFC 0244 §D (via RFC 0252 §D): the tool inputs to match; absent means any args."""
    argsMatch: ArgsMatch | None = None
    """docs/design.md §3: `exact` (RFC 8785 equality), `subset` (recursive) or `ignore`."""

    @property
    def has_args(self) -> bool:
        """Whether the document gave `args` (even `null`): absence is not a value."""
        return "args" in self.model_fields_set

    @functools.cached_property
    def args_match(self) -> ArgsMatch:
        """`mode()`, cached for what asks it again and again (a trajectory grader asks it of
        every pair of expected and made calls)."""
        return self.mode()

    def mode(self) -> ArgsMatch:
        """docs/design.md §3: the written `argsMatch`, else `exact` with args, `ignore` without.

        Not cached: what asks it once (the fixture cursor, of each entry) pays a fraction of
        a cached property's first ask (which takes a lock)."""
        if self.argsMatch is not None:
            return self.argsMatch
        return "exact" if self.has_args else "ignore"

    @model_validator(mode="after")
    def _pattern_needs_args(self) -> ArgsPattern:
        # `exact` or `subset` against no args has no meaning; refuse rather than guess.
        if self.argsMatch in ("exact", "subset") and not self.has_args:
            raise PydanticCustomError(
                "args_required", "argsMatch '{mode}' needs args", {"mode": self.argsMatch}
            )
        return self


class ToolResponse(ArgsPattern):
    """One `fixtures.toolResponses[]` entry (RFC 0081 §A; RFC 0244 §D; RFC 0245)."""

    NULLABLE_FIELDS: ClassVar[frozenset[str]] = frozenset({"args", "response"})

    response: JsonValue
    """RFC 0081 §A: what the tool returns; with `isError`, the error it fails with."""
    isError: bool | None = None
    """RFC 0245: serve `response` as the tool's error (`agent.tool-returned.status: error`)."""

    @property
    def is_error(self) -> bool:
        return self.isError is True


class Fixtures(_Closed):
    """`tasks[].fixtures` (RFC 0081 §A, plus `onMiss` from RFC 0244 §D)."""

    toolResponses: list[ToolResponse] | None = None
    """RFC 0081 §A: answers served in place of live tool calls; `[]` is present, not absent."""
    memorySeed: list[dict[str, JsonValue]] | None = None
    """RFC 0081 §A: memory entries seeded before the task runs."""
    onMiss: OnMiss | None = None
    """RFC 0244 §D: `fail` (no live call, the task fails) or `live`; default `fail` (design §3)."""

    @property
    def on_miss(self) -> OnMiss:
        """docs/design.md §3: `fail` whenever `fixtures` is present and `onMiss` is not."""
        return self.onMiss or "fail"


class PathCheck(_Closed):
    """One `expected.match.paths[]` entry of a `json-path` match (docs/graders.md)."""

    NULLABLE_FIELDS: ClassVar[frozenset[str]] = frozenset({"value"})

    path: str
    """A singular JSONPath query into the decision (`wire/jsonpath.py`), e.g. `$.action`."""
    value: JsonValue
    """The value the decision must hold there (canonical JSON equality)."""

    @field_validator("path")
    @classmethod
    def _singular_query(cls, path: str) -> str:
        # Refused at validation, so a run never meets a path it cannot read.
        try:
            parse_json_path(path)
        except JsonPathError as exc:
            raise PydanticCustomError(
                "json_path", "not a JSONPath this host reads: {why}", {"why": str(exc)}
            ) from None
        return path


class Match(_Closed):
    """`expected.match` (RFC 0081 §A; the strategies past `json-match` are docs/graders.md)."""

    NULLABLE_FIELDS: ClassVar[frozenset[str]] = frozenset({"value"})

    strategy: MatchStrategy
    """RFC 0081 §A `exact` / `contains` on the stringified decision, `json-match` deep
    equality; this host's `json-subset`, `json-path`, `regex` and `custom`."""
    value: JsonValue = None
    """RFC 0081 §A: the value the decision is compared with (a pattern for `regex`, whatever
    the grader takes for `custom`); not given with `json-path`."""
    paths: list[PathCheck] | None = Field(default=None, min_length=1)
    """`json-path` only: the paths of the decision to check, each with its value."""
    grader: str | None = Field(default=None, pattern=GRADER_ID_PATTERN)
    """`custom` only: the id of a grader the host's project declares (`[[graders]]`)."""

    @property
    def has_value(self) -> bool:
        """Whether the document gave `value` (even `null`): absence is not a value."""
        return "value" in self.model_fields_set

    @field_validator("value")
    @classmethod
    def _pattern_compiles(cls, value: JsonValue, info: ValidationInfo) -> JsonValue:
        # A `regex` pattern is checked here, so a run never meets one it cannot compile.
        if info.data.get("strategy") != "regex":
            return value
        if not isinstance(value, str):
            raise PydanticCustomError("regex_type", "a regex pattern must be a string")
        # Imported for the first regex pattern: a host with none never pays for the module.
        import regex

        try:
            regex.compile(value)
        except regex.error as exc:
            raise PydanticCustomError(
                "regex_invalid", "not a valid regular expression: {why}", {"why": str(exc)}
            ) from None
        return value

    @model_validator(mode="after")
    def _strategy_needs_its_members(self) -> Match:
        problem = None
        if self.strategy == "json-path":
            if self.paths is None or self.has_value:
                problem = "strategy 'json-path' takes paths, not value"
        elif self.paths is not None:
            problem = f"paths belong to strategy 'json-path', not '{self.strategy}'"
        elif self.strategy != "custom" and not self.has_value:
            problem = f"strategy '{self.strategy}' needs value"
        if self.strategy == "custom" and self.grader is None:
            problem = "strategy 'custom' needs grader"
        elif self.strategy != "custom" and self.grader is not None:
            problem = f"grader belongs to strategy 'custom', not '{self.strategy}'"
        if problem is not None:
            raise PydanticCustomError("match_members", "{problem}", {"problem": problem})
        return self


class RubricItem(_Closed):
    """`expected.rubric[]` (RFC 0081 §A)."""

    criterion: str = Field(min_length=1)
    """RFC 0081 §A: what a grader judges."""
    weight: float = Field(ge=0, le=1)
    """RFC 0081 §A: its weight, 0..1."""


class ExpectedCall(ArgsPattern):
    """`expected.calls[]`: one call a trajectory expects (RFC 0244 §A; docs/design.md §3)."""


class Expected(_Closed):
    """`tasks[].expected` (RFC 0081 §A; `trajectory` per docs/design.md §3)."""

    kind: ExpectedKind
    """RFC 0081 §A `golden | rubric`; RFC 0244 §A `trajectory`."""
    match: Match | None = None
    """RFC 0081 §A: required when `kind` is `golden`."""
    rubric: list[RubricItem] | None = None
    """RFC 0081 §A: required when `kind` is `rubric`."""
    calls: list[ExpectedCall] | None = None
    """docs/design.md §3: required when `kind` is `trajectory`; graded on the calls as executed."""
    order: TrajectoryOrder = "strict"
    """docs/design.md §3: how `calls` compare with the executed calls; default `strict`."""

    @model_validator(mode="after")
    def _kind_needs_its_member(self) -> Expected:
        # RFC 0081 §A: `match` when golden, `rubric` when rubric;
        # docs/design.md §3: `calls` when trajectory.
        needed = {"golden": self.match, "rubric": self.rubric, "trajectory": self.calls}
        member = {"golden": "match", "rubric": "rubric", "trajectory": "calls"}[self.kind]
        if needed[self.kind] is None:
            raise PydanticCustomError(
                "kind_member_missing",
                "kind '{kind}' needs {member}",
                {"kind": self.kind, "member": member},
            )
        return self


class Task(_Closed):
    """`tasks[]` (RFC 0081 §A; `trials` / `passPolicy` per docs/design.md §3)."""

    NULLABLE_FIELDS: ClassVar[frozenset[str]] = frozenset({"input"})

    taskId: str = Field(pattern=TASK_ID_PATTERN)
    """RFC 0081 §A: unique within the suite; pairs tasks across versions (RFC 0244 §F)."""
    input: JsonValue
    """RFC 0081 §A: opaque input handed to the agent."""
    expected: Expected
    """RFC 0081 §A: how the task is graded."""
    fixtures: Fixtures | None = None
    """RFC 0081 §A: served tool answers and seeded memory."""
    trials: int | None = Field(default=None, ge=1, le=100)
    """docs/design.md §3: trials of this task; overrides the suite's."""
    passPolicy: PassPolicyName | None = None
    """docs/design.md §3: how trial results make the task's `passed`; overrides the suite's."""

    @functools.cached_property
    def expected_document(self) -> dict[str, Any]:
        """`expected` as the suite wrote it (defaults of other kinds, a trajectory's order,
        left out), dumped once a parsed task: the catalog keeps a version parsed, and dumps
        its tasks' `expected` as it keeps it (`KeptSuite.of`), so every trial of every run of
        it holds this one document in its detail, which nothing changes."""
        return self.expected.model_dump(mode="json", by_alias=True, exclude_unset=True)


class Thresholds(_Closed):
    """`thresholds` (RFC 0081 §A); absent means the host default bar."""

    passScore: float | None = Field(default=None, ge=0, le=1)
    """RFC 0081 §A: the least `aggregateScore` that passes."""
    maxCostUsd: float | None = Field(default=None, ge=0)
    """RFC 0081 §A: the most `totalCostUsd` that passes."""
    maxP95LatencyMs: int | None = Field(default=None, ge=0)
    """RFC 0081 §A: the most p95 trial latency that passes."""


class Suite(_Closed):
    """An `AgentEvalSuite` document (RFC 0081 §A plus docs/design.md §3)."""

    suiteId: str = Field(pattern=SUITE_ID_PATTERN)
    """RFC 0081 §A: stable across versions; a baseline matches on it (RFC 0251 §C)."""
    version: str = Field(pattern=SEMVER_PATTERN)
    """RFC 0081 §A: SemVer of this document."""
    targetAgentId: str | None = Field(default=None, min_length=1)
    """RFC 0081 §A: the agent the suite is written for."""
    modes: list[EvalMode] = Field(min_length=1)
    """RFC 0081 §D: the modes a run of this suite may request; unique."""
    allowedModels: list[ModelClass] | None = None
    """RFC 0081 §A: model classes the suite may be evaluated on."""
    thresholds: Thresholds | None = None
    """RFC 0081 §A: the bar `EvalSummary.passed` is judged against."""
    tasks: list[Task] = Field(min_length=1)
    """RFC 0081 §A: at least one task; `taskId`s unique."""
    trials: int | None = Field(default=None, ge=1, le=100)
    """docs/design.md §3: default trials per task (1 when absent)."""
    passPolicy: PassPolicyName | None = None
    """docs/design.md §3: default pass policy over a task's trials (`all` when absent)."""

    @field_validator("modes")
    @classmethod
    def _modes_unique(cls, modes: list[EvalMode]) -> list[EvalMode]:
        # RFC 0081 §A: `modes` is a unique array.
        if len(set(modes)) != len(modes):
            raise PydanticCustomError("modes_not_unique", "must be distinct")
        return modes

    @field_validator("tasks")
    @classmethod
    def _task_ids_unique(cls, tasks: list[Task]) -> list[Task]:
        # RFC 0244 §F pairs by taskId, so a suite may not hold two tasks with one id.
        first: dict[str, int] = {}
        for index, task in enumerate(tasks):
            if task.taskId in first:
                raise PydanticCustomError(
                    "task_id_duplicate",
                    "tasks[{index}].taskId repeats tasks[{first}].taskId",
                    {"index": index, "first": first[task.taskId]},
                )
            first[task.taskId] = index
        return tasks

    def task(self, task_id: str) -> Task | None:
        """The task with this id, if the suite has one."""
        return next((t for t in self.tasks if t.taskId == task_id), None)

    @property
    def task_ids(self) -> tuple[str, ...]:
        """Task ids in suite order."""
        return tuple(t.taskId for t in self.tasks)

    def to_document(self) -> dict[str, Any]:
        """The document as written: unset keys stay absent, so `[]` and absence survive."""
        return self.model_dump(mode="json", exclude_unset=True)


def parse_suite(document: object) -> Suite:
    """Validate a suite document; refuse it naming each offending JSON path.

    Raises `errors.ValidationFailed` with `"<path>: <what is wrong>"` per error,
    joined by "; ". Pydantic's messages never quote the input, so no content
    leaks into the refusal.
    """
    try:
        return Suite.model_validate(document)
    except ValidationError as exc:
        problems = [f"{errors.error_pointer(e['loc'])}: {e['msg']}" for e in exc.errors()]
        raise errors.ValidationFailed("; ".join(problems)) from None
