"""Task detail of an eval run: why each task passed or failed (host routes `/host/wopeval/…`).

Not part of the RFC 0081 `EvalSummary`, which stays content-free: these shapes
carry decisions, expected values, diffs and tool traces, as far as the agent's
`wireContent` lets them leave the host (`engine/recording/content.py` decides).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from wopeval.wire._event_base import AnyJson

ChangeKind = Literal["added", "removed", "changed"]
ServedAs = Literal["fixture", "live", "miss"]
ToolField = Literal["description", "inputSchema"]


class _Shape(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PathChange(_Shape):
    path: str
    """A JSONPath into the compared values, e.g. `$.customer.tier` or `$.items[2]`."""
    kind: ChangeKind
    """`added`: only in the actual value; `removed`: only in the expected one."""
    expected: AnyJson | None = None
    """The expected (or recorded) value at `path`; absent for `added`."""
    actual: AnyJson | None = None
    """The actual value at `path`; absent for `removed`."""


class ToolChange(_Shape):
    tool: str
    """The tool's canonical `<server>:<tool>` name."""
    kind: ChangeKind
    """`added`: offered now, not in the recording; `removed`: recorded, not offered now;
    `changed`: offered both times, otherwise."""
    fields: list[ToolField] = []
    """For `changed`: which of its `description` and `inputSchema` differ."""


class CriterionView(_Shape):
    criterion: str
    """The rubric criterion as the suite writes it (RFC 0081 §A)."""
    weight: float
    """Its weight in the trial's score."""
    score: float | None = None
    """The judge's score for it, 0..1; absent when it went unjudged."""
    passed: bool
    """Its score reached the judge's threshold."""
    reason: str | None = None
    """The judge's words (`full` only)."""
    exchange: int | None = None
    """The judge's exchange (`ModelCallView.index`) that graded it."""


class JudgeView(_Shape):
    judgeId: str
    """The project's `[[judges]]` entry that graded the trial."""
    digest: str
    """`sha256:` of its model, API, prompt template, scale and threshold."""
    gate: bool
    """Whether the project lets this judge gate a verdict (docs/graders.md)."""
    criteria: list[CriterionView]
    """Each criterion's grade, in rubric order."""
    unjudged: str | None = None
    """Why no judgement was given (the task's verdict is then inconclusive)."""


class GradeView(_Shape):
    passed: bool
    """Whether the grader passed this trial."""
    score: float
    """The grader's score, 0..1."""
    reason: str
    """One line a human reads first."""
    diff: list[PathChange] | None = None
    """For JSON strategies: where the decision differs from the expected value."""
    traceback: str | None = None
    """A custom grader that raised: its traceback."""
    judge: JudgeView | None = None
    """A rubric trial: its judge and the grade of each criterion."""


class TraceCall(_Shape):
    index: int
    """Position of the call among the trial's calls, from 0."""
    tool: str
    """The tool's `<scope>:<tool-id>`."""
    servedBy: ServedAs
    """A fixture answered, the live tool ran, or no fixture matched (a miss)."""
    status: str
    """`agent.tool-returned.status`."""
    delegate: bool
    """Made by a delegate of the agent (not graded, not derived)."""
    durationMs: int | None = None
    """Wall time of the call."""
    inputs: AnyJson | None = None
    """The args as the agent passed them (`wireContent: full`)."""
    argsHash: str
    """`sha256:` + hex of the JCS args."""
    outcome: AnyJson | None = None
    """The result (`full`, status `ok`)."""
    error: dict[str, AnyJson] | None = None
    """The tool error (code and message; details only for `full`)."""


class ClosestEntry(_Shape):
    entryIndex: int
    """Index of the closest unconsumed fixture entry in the task's list."""
    args: AnyJson | None = None
    """That entry's recorded args (`full`)."""


class MissView(_Shape):
    callIndex: int
    """The call (`TraceCall.index`) no fixture matched."""
    tool: str
    """The tool it named."""
    argsHash: str
    """`sha256:` + hex of the JCS args the agent passed."""
    closest: ClosestEntry | None = None
    """The closest unconsumed entry for that tool; none when no entry names the tool."""
    diff: list[PathChange] | None = None
    """Argument paths added, removed or changed against the closest entry (`full`)."""
    consumedForTool: int = 0
    """Entries for that tool this trial had already used (a repeated call misses so)."""


class AgentErrorView(_Shape):
    type: str
    """The exception's class name."""
    message: str | None = None
    """Its message (`full` only)."""


class ModelCallView(_Shape):
    index: int
    """Position of the exchange among the trial's model exchanges, from 0."""
    agentId: str
    """The agent that asked (the eval's agent, or a delegate)."""
    delegate: bool
    """Asked by a delegate of the agent (not replayed)."""
    api: Literal["chat", "responses", "messages"] = "chat"
    """The wire API: OpenAI Chat Completions, OpenAI Responses or Anthropic Messages."""
    via: Literal["lane", "proxy", "judge"]
    """An LLM lane's own loop, the agent's model proxy, or a rubric task's judge."""
    servedBy: Literal["live", "replay", "miss"]
    """The upstream answered, a recorded answer was replayed, or no recording matched."""
    status: Literal["ok", "error"]
    """Whether the exchange ended in an answer."""
    model: str | None = None
    """The model the request named."""
    responseModel: str | None = None
    """The model id the answer reported."""
    stream: bool
    """The request asked for streamed deltas."""
    attempts: int
    """Requests sent upstream for it (retries included); 0 when none was."""
    latencyMs: int
    """Wall time of the exchange, retries included."""
    promptTokens: int | None = None
    """Input tokens the answer reported."""
    completionTokens: int | None = None
    """Output tokens the answer reported."""
    costUsd: float | None = None
    """At the project's price table; absent for a replayed answer or an unpriced model."""
    requestHash: str
    """`sha256:` + hex of the JCS request without its transport keys (what replay matches)."""
    request: AnyJson | None = None
    """The request as sent: messages, tools, parameters (`full`; never the API key)."""
    response: AnyJson | None = None
    """The answer as its API records it: chat's normalised `{content, toolCalls,
    finishReason, usage, …}`, a Responses response, an Anthropic message (`full`)."""
    error: dict[str, AnyJson] | None = None
    """Why it failed: the reason, the HTTP status and the error's type and code; for a model
    miss the nearest recorded request (`nearest`) and the `diff` from it (values `full`
    only)."""


class TrialDetail(_Shape):
    trial: int
    """The trial number, from 0."""
    passed: bool
    """Whether the trial passed (no miss, no agent error, the grader passed)."""
    reason: str
    """One line: why it failed, or `passed`."""
    durationMs: int
    """Wall time of the trial."""
    decision: AnyJson | None = None
    """The agent's decision (`full`)."""
    decisionHash: str | None = None
    """`sha256:` + hex of the JCS decision."""
    expected: AnyJson | None = None
    """The task's `expected` block as the suite wrote it."""
    grade: GradeView | None = None
    """The grader's result; absent when the agent failed before deciding."""
    calls: list[TraceCall]
    """Every tool call of the trial, in order."""
    misses: list[MissView]
    """Every fixture miss, with the closest recording."""
    error: AgentErrorView | None = None
    """The exception the agent raised, if it did."""
    stderr: str | None = None
    """What the agent said (a command agent's stderr, an http agent's error answer): its
    last 16 KiB, credentials and tokens redacted (`full` only)."""
    modelCalls: list[ModelCallView] = []
    """Every model exchange of the trial, in order (the LLM lanes and the model proxy)."""
    costUsd: float | None = None
    """What the trial's live model exchanges cost (the project's price table)."""
    contentErased: bool = False
    """The tool content of this trial was erased (RFC 0252 erasure)."""


class MoreTrialsView(_Shape):
    """What more trials would do for an inconclusive task, at its observed pass rates
    (docs/graders.md, "More trials needed")."""

    trials: int | None = None
    """More trials of this run alone that would decide it; absent when none up to the cap
    would (`wopeval eval --trials auto` adds these)."""
    eachSide: int | None = None
    """More trials on each side, the baseline run again too; absent when none would."""
    note: str
    """One line saying so, or why it cannot be decided."""


class TaskLine(_Shape):
    taskId: str
    """The task."""
    scored: bool
    """Whether all its trials ran (`eval.scored`); until then the figures are so far."""
    passed: bool
    """The task's pass under its pass policy (so far: every trial so far passed)."""
    score: float
    """Passed trials ÷ trials."""
    trials: int
    """Trials run."""
    passedTrials: int
    """Trials that passed."""
    fixtureMissCount: int
    """Fixture misses over all trials (model replay misses included)."""
    costUsd: float | None = None
    """What the task's model exchanges cost over all its trials."""
    latencyMs: int | None = None
    """Mean trial latency."""
    verdict: str | None = None
    """The paired verdict against the baseline, when there is one."""
    pValue: float | None = None
    """The Holm-adjusted p-value (multi-trial tasks)."""
    flaky: bool | None = None
    """Whether the task's trials disagreed."""
    moreTrials: MoreTrialsView | None = None
    """For an `inconclusive` task: the trials that would decide it."""
    reason: str
    """The first failing trial's reason, or `passed`."""
    toolsChanged: list[ToolChange] | None = None
    """The MCP tools the agent was offered against those its fixture source run was offered
    (docs/agents.md, "Tool contracts"): each tool added, removed or changed, `[]` when
    none; absent when not compared (no source, a source that recorded no MCP listing, or
    an offline host, which offers the recorded tools)."""


class TaskList(_Shape):
    runId: str
    """The eval run."""
    tasks: list[TaskLine]
    """Every scored task, in the order they were scored."""


class TaskDetail(TaskLine):
    runId: str
    """The eval run."""
    trialDetails: list[TrialDetail]
    """Each trial, in order."""
