"""A judge's calibration as the host reports it (docs/graders.md, "Calibration").

A host extension, served at `POST /host/wopeval/judges/{judgeId}/calibrations`: no RFC
defines it. Content-free: ids, counts and numbers, never the output judged or a note.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from wopeval.wire.date_time import DateTime


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CalibrateRequest(_Closed):
    """The body of a calibration request (optional)."""

    since: DateTime | None = None
    """Only labels made at or after this instant count."""


class ConfusionTable(_Closed):
    """The judge's call against the person's, over the labelled cases."""

    bothPass: int = Field(ge=0)
    judgePassHumanFail: int = Field(ge=0)
    judgeFailHumanPass: int = Field(ge=0)
    bothFail: int = Field(ge=0)


class Disagreement(_Closed):
    """A case where the judge and the person differ: the eval run's task that was labelled."""

    runId: str
    taskId: str
    judgePassed: bool
    humanPassed: bool
    dashboardPath: str
    """The task's page on this host's dashboard (relative to the host's base URL)."""


class Floor(_Closed):
    """The project's floor a gating judge's calibration must clear."""

    kappaMin: float = Field(ge=-1, le=1)
    minLabels: int = Field(ge=1)


class CalibrationReport(_Closed):
    """One calibration of a judge at its current digest, as recorded."""

    calibrationId: str
    judgeId: str
    digest: str
    """The judge's digest (model, API, prompt, scale, threshold) the verdicts were made at."""
    gate: bool
    labels: int = Field(ge=0)
    """Labelled cases paired with a verdict of the judge at this digest."""
    accuracy: float | None = Field(default=None, ge=0, le=1)
    kappa: float | None = Field(default=None, ge=-1, le=1)
    confusion: ConfusionTable
    disagreements: list[Disagreement]
    floor: Floor
    clears: bool
    """Enough labels and kappa at or above the floor: a `gate = true` judge gates."""
    since: str | None = None
    calibratedAt: str

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)
