"""What an eval run's row keeps of its plan (`run_plans.plan`): enough, with the run's derived
fixture copies, for a worker in another process to make the same plan again."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, PrivateAttr, field_serializer

from wopeval import evals
from wopeval.wire import json_text
from wopeval.wire.eval_options import EvalMode, ToolsChangedPolicy
from wopeval.wire.json_text import JsonObject
from wopeval.wire.summary import Advisory, EvalSummary
from wopeval.wire.task_detail import ToolChange


class StoredToolContract(BaseModel):
    """One task's MCP tool contract: the listings it serves and how they changed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    served: dict[str, str]
    """MCP server → the digest of the listing the task is served."""
    changed: list[ToolChange] | None
    """How the tools differ from the recording's; None: not compared."""


class StoredPlan(BaseModel):
    """The stored plan. The members added after the first release have their then-implied
    defaults, so a plan stored before them reads as it ran."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    suite: JsonObject
    """The suite document as it ran, never re-serialised (its `version` is filtered on)."""
    agentId: str
    """The agent under evaluation."""
    modes: list[EvalMode]
    """The eval modes the run exercises."""
    baselineRunId: str | None
    """The run compared against, if any."""
    fixtureRuns: dict[str, str] | None
    """Task id → the run its fixtures were derived from."""
    baselineSummary: EvalSummary | None
    """The baseline's summary as it was when the run was created."""
    alpha: float = evals.DEFAULT_ALPHA
    """The significance level of the regression verdict."""
    regressionVerdict: bool = True
    """Whether the regression block carries a verdict."""
    modelReplay: bool = False
    """Whether tasks with a fixture source replay its model answers too."""
    toolsChangedPolicy: ToolsChangedPolicy = "report"
    """`fail`: a task whose MCP tools changed since its source fails closed."""
    toolContracts: dict[str, StoredToolContract] = {}
    """Task id → its tool contract, for the tasks that have one."""
    judgeId: str | None = None
    """The judge of the suite's rubric tasks."""
    judgeSourceRunId: str | None = None
    """The run whose recorded judgements the run replays."""
    judgeLive: bool = True
    """False: a judgement no recording holds is not asked (the trial is unjudged)."""
    judgeAdvisory: Advisory | None = None
    """The judge may not gate this run (decided at create): its rubric tasks are advisory."""

    @field_serializer("baselineSummary")
    def _summary_as_served(self, summary: EvalSummary | None) -> JsonObject | None:
        # Kept as `/eval-summary` serves it: absent members omitted, not null.
        return None if summary is None else summary.to_wire()

    def served_digests(self) -> set[str]:
        """The digests of every listing the plan serves (a worker loads them to rebuild it)."""
        return {
            digest
            for contract in self.toolContracts.values()
            for digest in contract.served.values()
        }

    _suite_text: str | None = PrivateAttr(default=None)
    """`suite`'s JSON text as it was stored when published (`with_suite_text`)."""

    def with_suite_text(self, text: str | None) -> StoredPlan:
        """This plan, its suite stored as `text` (the suite's own JSON text, written when it
        was published) rather than written again; None: written as it is."""
        self._suite_text = text
        return self

    def to_stored(self) -> JsonObject:
        # The suite is JSON as it ran: stored as it is, not walked and copied again; its
        # text, when it was written already, is put in as it is (the same bytes).
        text = self._suite_text
        suite = self.suite if text is None else json_text.embedded(text)
        return {"suite": suite, **self.model_dump(mode="json", exclude={"suite"})}

    def written(self) -> str:
        """`to_stored()`'s text as the store's codec writes it (`json_text.compact`).

        With the suite's text kept, the rest is written alone and the suite's text joined
        in: the same characters (the writer puts an embedded text in as it is), without
        copying ~2 MB through the writer's bytes and decoding them again (~1 ms a create).
        """
        text = self._suite_text
        if text is not None:
            rest = json_text.written(self.model_dump(mode="json", exclude={"suite"}))
            # The rest always has members (`agentId`): its text opens `{"agentId":…`.
            if rest is not None:
                return "".join(('{"suite":', text, ",", rest[1:].decode()))
        return json_text.compact(self.to_stored())
