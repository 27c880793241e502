"""How a run ends, decided once (G7): completed, failed or cancelled, with what it leaves."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wopeval.engine.runlog.steps import Step
from wopeval.wire import events
from wopeval.wire.runs import RunStatus


class RunFailure(Exception):
    """Ends a run `failed` with a machine code; `step` holds events staged before the failure."""

    def __init__(
        self,
        code: str,
        message: str,
        step: Step | None = None,
        details: dict[str, Any] | None = None,
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
    outputs: dict[str, Any] | None = None
    summary: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    reason: str | None = None
    idle: list[dict[str, Any]] | None = None
    """A completed workflow run's idle agents (`RunRecord.idle`)."""

    @classmethod
    def failed(
        cls,
        code: str,
        message: str,
        step: Step | None = None,
        details: dict[str, Any] | None = None,
    ) -> Terminal:
        error: dict[str, Any] = {"code": code, "message": message}
        if details:
            error["details"] = details
        return cls(RunStatus.FAILED, step or Step(), error=error)

    def final_event(self) -> events.Payload:
        if self.status is RunStatus.COMPLETED:
            return events.RunCompleted(outputs=self.outputs or {})
        if self.status is RunStatus.CANCELLED:
            return events.RunCancelled(reason=self.reason)
        error = self.error or {"code": "internal_error", "message": "The run failed."}
        return events.RunFailed(error=events.RunErrorInfo(**error))
