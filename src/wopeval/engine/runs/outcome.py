"""How a run ends, decided once (G7): completed, failed or cancelled, with what it leaves."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import JsonValue

from wopeval.engine.runlog.steps import STORE_UNREACHABLE, Step
from wopeval.wire import events
from wopeval.wire.json_text import JsonObject
from wopeval.wire.runs import IdleAgent, RunStatus
from wopeval.wire.summary import EvalSummary


class RunFailure(Exception):
    """Ends a run `failed` with a machine code; `step` holds events staged before the failure."""

    def __init__(
        self,
        code: str,
        message: str,
        step: Step | None = None,
        details: dict[str, JsonValue] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.step = step or Step()
        self.details = details


@dataclass
class Terminal:
    status: RunStatus
    step: Step = field(default_factory=Step)
    outputs: JsonObject | None = None
    summary: EvalSummary | None = None
    error: events.RunErrorInfo | None = None
    reason: str | None = None
    idle: list[IdleAgent] | None = None
    """A completed workflow run's idle agents (`RunRecord.idle`)."""

    @classmethod
    def failed(
        cls,
        code: str,
        message: str,
        step: Step | None = None,
        details: dict[str, JsonValue] | None = None,
    ) -> Terminal:
        error = events.RunErrorInfo(code=code, message=message, details=details or None)
        return cls(RunStatus.FAILED, step or Step(), error=error)

    @classmethod
    def unreachable(cls) -> Terminal:
        """How a run ends whose step did not land (`StepNotLanded`): the database was out
        of reach, the driver's message in the host's log only."""
        return cls.failed(
            STORE_UNREACHABLE,
            "The host's database was out of reach: this run's progress was not recorded.",
        )

    def final_event(self) -> events.Payload:
        if self.status is RunStatus.COMPLETED:
            return events.RunCompleted(outputs=self.outputs or {})
        if self.status is RunStatus.CANCELLED:
            return events.RunCancelled(reason=self.reason)
        error = self.error or events.RunErrorInfo(code="internal_error", message="The run failed.")
        return events.RunFailed(error=error)
