"""Run annotations: `annotation-create.schema.json` in, `annotation.schema.json` out (RFC 0056;
runs.md §Annotations).

An annotation is a person's (or a supervising agent's) quality signal on a run or on one
node of it: a `rating` (1..5), a `correction`, a `label` or a `flag`. It is a side
resource of the run, never one of its events. Every object here is closed. The request
carries the signal, an optional anchor and an optional note; the host binds
`target.runId` to the path and sets `annotationId`, `actor` and `createdAt`. In an eval
run a task is the node an annotation names (docs/decisions.md, "Annotations").
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

SignalKind = Literal["rating", "correction", "label", "flag"]
SIGNAL_KINDS: tuple[SignalKind, ...] = ("rating", "correction", "label", "flag")
TARGETS = ("run", "node")
"""The granularities this host accepts (RFC 0056 §A `targets`): a run, or a node of it (a
task of an eval run). An `eventId` anchor is refused: this host does not advertise it."""

LABEL_MAX = 256
NOTE_MAX = 4000
CORRECTION_MAX = 16_000
PASS, FAIL = "pass", "fail"
"""The labels a reviewer gives a task's output from the dashboard and `wopeval annotate`."""


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _json_integer(value: object) -> object:
    """A JSON integer as JSON Schema reads one: a number without a fraction (`4` or `4.0`),
    never a string or a boolean ("4" is not 4)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be an integer")
    return value


class RatingSignal(_Closed):
    kind: Literal["rating"]
    rating: Annotated[int, BeforeValidator(_json_integer)] = Field(ge=1, le=5)
    """RFC 0056 §B: an integer 1..5, required iff `kind` is `rating`."""


class CorrectionSignal(_Closed):
    kind: Literal["correction"]
    correction: str = Field(min_length=1, max_length=CORRECTION_MAX)
    """RFC 0056 §B: the corrected text, untrusted user content (redacted before it is kept)."""


class LabelSignal(_Closed):
    kind: Literal["label"]
    label: str = Field(min_length=1, max_length=LABEL_MAX)
    """RFC 0056 §B: required iff `kind` is `label`; `pass` and `fail` are what calibration reads."""


class FlagSignal(_Closed):
    kind: Literal["flag"]


Signal = Annotated[
    RatingSignal | CorrectionSignal | LabelSignal | FlagSignal, Field(discriminator="kind")
]


class AnchorIn(_Closed):
    """The request's `target`: `runId` is bound by the path (and must equal it if given)."""

    runId: str | None = None
    eventId: str | None = None
    """Refused here: this host advertises the `run` and `node` targets only."""
    nodeId: str | None = Field(default=None, pattern=r"^[A-Za-z0-9._~:-]{1,128}$")
    """A node of the run; in an eval run, one of its tasks."""


class CreateAnnotationRequest(_Closed):
    """The closed `POST /runs/{runId}/annotations` body (`annotation-create.schema.json`)."""

    signal: Signal
    target: AnchorIn | None = None
    note: str | None = Field(default=None, max_length=NOTE_MAX)
    """RFC 0056 §B: a free-text note, untrusted user content (redacted before it is kept)."""


class AnnotationTarget(_Closed):
    runId: str
    nodeId: str | None = None


class Actor(_Closed):
    principalRef: str
    """Who annotated: the caller's credential, never a value from the body (RFC 0056 §E)."""


class Annotation(_Closed):
    """`annotation.schema.json`: what `createAnnotation` answers and `listAnnotations` lists."""

    annotationId: str
    target: AnnotationTarget
    signal: Signal
    actor: Actor
    note: str | None = None
    createdAt: str

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


class AnnotationList(_Closed):
    """`listAnnotations`' answer: `{annotations: [...]}`, oldest first."""

    annotations: list[Annotation]


def principal_ref(key_id: str) -> str:
    """The `actor.principalRef` of a caller: its API key's subject (wire/runs.py `owner_for`)."""
    return f"urn:wopeval:api-key:{key_id}"
