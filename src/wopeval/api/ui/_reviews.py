"""Each task's latest pass/fail label, as the eval and compare pages show it (`labels.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from wopeval.api.served import ServedHost
from wopeval.api.ui.sessions import Session
from wopeval.store import OwnedRun
from wopeval.wire.annotations import FAIL, PASS, Annotation, LabelSignal


@dataclass(frozen=True)
class Review:
    """A task's latest label: what the page shows beside its form."""

    label: str
    note: str | None
    by: str
    at: str


async def task_reviews(host: ServedHost, session: Session, record: OwnedRun) -> dict[str, Review]:
    """The latest pass/fail label of each task of the eval run, by task id."""
    latest: dict[str, Review] = {}
    for annotation in await host.engine.annotations(session.principal, record.run_id):
        review = _review(annotation)
        if review is not None and annotation.target.nodeId is not None:
            latest[annotation.target.nodeId] = review
    return latest


def _review(annotation: Annotation) -> Review | None:
    signal = annotation.signal
    if not isinstance(signal, LabelSignal) or signal.label not in (PASS, FAIL):
        return None
    by = annotation.actor.principalRef
    return Review(signal.label, annotation.note, by, annotation.createdAt)
