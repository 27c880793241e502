"""Run resources on the v2 wire: the createRun body, the snapshot, owner and lists (runs.md)."""

from __future__ import annotations

import enum
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StringConstraints,
    field_validator,
)

from wopeval.wire.eval_options import EvalMode


class RunStatus(enum.StrEnum):
    """Run lifecycle (runs.md §Statuses); the last three are terminal."""

    PENDING = "pending"
    RUNNING = "running"
    PAUSED = "paused"
    CANCELLING = "cancelling"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def is_terminal(self) -> bool:
        return self in _TERMINAL


_TERMINAL = frozenset({RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED})


class RunKind(enum.StrEnum):
    WORKFLOW = "workflow"
    EVAL = "eval"
    FORK = "fork"


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Section(BaseModel):
    """A section of `configurable`: closed like the whole, each value taken as written ("5" is
    not 5), since the run keeps and surfaces the object as it was sent."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class RunSection(_Section):
    """`configurable.run` (runs.md §`run` section)."""

    recursionLimit: int | None = Field(default=None, ge=1)
    """Clamped to `limits.maxNodeExecutions`."""
    runTimeoutMs: int | None = Field(default=None, ge=1)
    """Resolves to `min(runTimeoutMs, limits.maxRunDurationMs)`; out of range is 400."""
    maxLoopIterations: int | None = Field(default=None, ge=1)
    """Resolves against `limits.maxLoopIterations`."""
    escalationThreshold: int | None = Field(default=None, ge=0)
    """The `low-confidence` threshold (interrupt.md)."""


ReasoningVerbosity = Literal["none", "summary", "full"]


class AiSection(_Section):
    """`configurable.ai` (runs.md §`ai` section)."""

    provider: str | None = None
    """A provider of `aiProviders.providers`."""
    model: str | None = None
    """The model the provider is asked for."""
    temperature: float | None = Field(default=None, ge=0, le=2)
    """Sampling temperature, 0..2."""
    maxTokens: int | None = Field(default=None, ge=1)
    """Ceiling on a completion's tokens."""
    credentialRef: str | None = None
    """A host-issued reference to a stored credential; never key material."""
    promptOverrides: dict[str, str] | None = None
    """Prompt name → replacement text."""
    mockProvider: dict[str, JsonValue] | None = None
    """A test-keys-only provider stand-in; open by the schema."""
    reasoningVerbosity: ReasoningVerbosity | None = None
    """How much reasoning the model is asked to show."""
    maxRefusals: int | None = Field(default=None, ge=0)
    """The refusal ceiling (events.md E5)."""


class DistillationSection(_Section):
    """`configurable.distillation` (runs.md §`distillation` section)."""

    tokenBudget: int | None = Field(default=None, ge=1)
    """Resolves to `min(tokenBudget, memory.distillation.maxTokenBudget)`."""


ExtensionOrg = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")]
"""A registered org name (configurable.schema.json `extensions` property names)."""


class Configurable(_Section):
    """RFC 0171 §D.1 run configuration: closed at every level, `version: 1` required
    (configurable.schema.json; runs.md §Validation: an unknown root key, an unknown key
    inside a section and a dotted key are 400)."""

    version: Literal[1]
    """Schema version of the configurable object."""
    run: RunSection | None = None
    """Run-level settings section."""
    ai: AiSection | None = None
    """Model settings section."""
    distillation: DistillationSection | None = None
    """Distillation section."""
    budget: dict[str, JsonValue] | None = None
    """The run's budget policy (budget-policy.schema.json, whose keys this host does not
    read), kept as sent; docs/decisions.md §Wire."""
    extensions: dict[ExtensionOrg, dict[str, JsonValue]] | None = None
    """Vendor settings, each object under its org's name and nowhere else."""

    @field_validator("version", mode="before")
    @classmethod
    def _version_is_no_boolean(cls, value: object) -> object:
        # The schema's `const: 1` is not met by `true`, which `Literal[1]` would take.
        if isinstance(value, bool):
            raise ValueError("Input should be 1")
        return value


class CreateRunRequest(_Closed):
    """The closed `POST /runs` body (runs.md §Create; RFC 0251 §B; RFC 0252 §B)."""

    workflowId: str | None = Field(default=None, min_length=1)
    """Workflow to run; required unless `mode` is `eval` (runs.md §Create)."""
    inputs: dict[str, JsonValue] | None = None
    """Run inputs handed to the workflow's nodes."""
    residency: dict[str, JsonValue] | None = None
    """Data residency request (residency.schema.json); accepted, not acted on."""
    tenantId: str | None = None
    """Tenant hint; must equal the caller's tenant when given."""
    scopeId: str | None = None
    """Dedup scope for `OpenWOP-Dedup`."""
    callbackUrl: str | None = None
    """Completion callback; accepted, not called (no webhooks family is advertised)."""
    mode: Literal["eval"] | None = None
    """`eval` makes this an eval run (RFC 0081 §B)."""
    evalSuiteRef: str | None = Field(default=None, min_length=1)
    """The suite to run: a fixture id, `suite://<suiteId>@<version>` or `<suiteId>@<version>`."""
    agentId: str | None = Field(default=None, min_length=1)
    """The agent under evaluation."""
    evalModes: list[EvalMode] | None = None
    """RFC 0251 §B: the modes this run exercises."""
    baselineRunId: str | None = None
    """RFC 0251 §B: the prior eval run this run is compared against."""
    fixtureRuns: dict[str, str] | None = None
    """RFC 0252 §B: taskId → the run whose recorded tool calls become that task's fixtures."""
    configurable: Configurable | None = None
    """RFC 0171 configurable (closed)."""
    tags: list[str] | None = Field(default=None, max_length=100)
    """Free labels, each at most 256 characters."""
    metadata: dict[str, JsonValue] | None = None
    """Free-form caller metadata."""


class ForkRunRequest(_Closed):
    """`POST /runs/{runId}:fork` body (runs.md §Fork)."""

    mode: Literal["replay", "branch"]
    """`replay` re-emits the recorded log; `branch` is not offered by this host."""
    fromSeq: int | None = Field(default=None, ge=0)
    """First sequence not taken as fixed history; replay defaults to 0."""
    runOptionsOverlay: dict[str, JsonValue] | None = None
    """Branch-only overlay; must be empty for a replay."""


class CancelRunRequest(_Closed):
    """`POST /runs/{runId}/cancel` body."""

    reason: str | None = Field(default=None, max_length=1024)
    """Why the caller cancelled."""


MAX_BULK_CANCEL = 100
"""runs.md §Bulk cancel: the host's cap on `runIds` (the RECOMMENDED 100)."""


class BulkCancelRequest(_Closed):
    """`POST /runs:bulk-cancel` body (runs.md §Bulk cancel)."""

    runIds: list[str] = Field(min_length=1, json_schema_extra={"maxItems": MAX_BULK_CANCEL})
    """The runs to cancel, each processed on its own; over the cap is refused whole (the
    engine's refusal names `details.maxRunIds`, so the cap is documented, not validated here)."""
    reason: str | None = Field(default=None, max_length=1024)
    """Why the caller cancelled, given to every run."""


DrainPolicy = Literal["drain-current-node", "immediate"]


class PauseRunRequest(_Closed):
    """`POST /runs/{runId}:pause` body (runs.md §Pause and resume)."""

    reason: str | None = Field(default=None, max_length=1024)
    """Why the caller paused."""
    drainPolicy: DrainPolicy = "drain-current-node"
    """Let the executing unit finish first, or cut it (it starts afresh on resume)."""


class ResumeRunRequest(_Closed):
    """`POST /runs/{runId}:resume` body."""

    reason: str | None = Field(default=None, max_length=1024)
    """Why the caller resumed."""


class Subject(_Closed):
    """The api-key Subject of a caller (identity.md §1.1)."""

    issuer: str
    """Who vouches for the subject; here the host's api-key issuer URN."""
    subjectId: str
    """The key's id: the caller as the issuer knows it."""
    tenant: str
    """The tenant the key belongs to."""
    lane: str
    """How the subject authenticated (`api-key`)."""
    kind: str
    """`workload`: a program, not a person."""


class RunOwner(_Closed):
    """A run's `owner` block (runs.md §Snapshot): its tenant and the subject that created it."""

    tenant: str
    """The tenant that owns the run."""
    subject: Subject
    """The caller that created it."""


def owner_for(tenant: str, key_id: str) -> RunOwner:
    subject = Subject(
        issuer="urn:wopeval:api-key",
        subjectId=key_id,
        tenant=tenant,
        lane="api-key",
        kind="workload",
    )
    return RunOwner(tenant=tenant, subject=subject)


class IdleAgent(_Closed):
    """An agent of a completed workflow run that recorded nothing a replay could test
    (docs/recordings.md; the `wopeval.run` snapshot extension's `idle`)."""

    agentId: str
    """The agent."""
    nodeId: str
    """The node that invoked it."""
    reasons: list[str]
    """Why its invocation recorded nothing testable (evals/_idle.py)."""
