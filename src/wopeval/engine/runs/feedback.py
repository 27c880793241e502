"""Run annotations (RFC 0056; runs.md §Annotations; docs/decisions.md, "Annotations").

An annotation is kept beside its run and never enters its log: recording one appends no
event, a replay fork starts with none, and a diff never sees one. Followers of the run's
stream are told of it live (`run.annotated`, engine/live/notifier.py `announce`), once it
has committed. Its free text (`note`, a `correction`, a `label`) is untrusted user content:
the host's redaction rule for what agents say (engine/recording/redaction.py) runs over it
before it is kept, so a credential pasted into a note is never stored or exported.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Awaitable, Callable
from datetime import datetime

from pydantic import ValidationError

from wopeval.engine.catalog.catalog import Catalog
from wopeval.engine.live.notifier import Notifier
from wopeval.engine.runlog.steps import now, timestamp
from wopeval.store import AnnotationRow, OwnedRun, Store, StoredLabel, UnitOfWork
from wopeval.wire import errors
from wopeval.wire.annotations import (
    FAIL,
    NOTE_MAX,
    PASS,
    Actor,
    Annotation,
    AnnotationTarget,
    CorrectionSignal,
    CreateAnnotationRequest,
    LabelSignal,
    Signal,
    principal_ref,
)
from wopeval.wire.principal import Principal
from wopeval.wire.runs import RunKind

Redact = Callable[[str], str]
OnAnnotation = Callable[[UnitOfWork, Annotation], Awaitable[None]]

ANNOTATED = "run.annotated"
"""The live notification's name: an SSE frame for followers, never a stored event."""


async def create_annotation(
    store: Store,
    notifier: Notifier,
    catalog: Catalog,
    principal: Principal,
    run_id: str,
    request: CreateAnnotationRequest,
    on_insert: OnAnnotation | None = None,
) -> Annotation:
    """Record the caller's annotation on its run (RFC 0056 §C): any run, ended or not.
    `on_insert` runs in the transaction that adds it (an idempotency key's answer kept)."""
    anchor = request.target
    if anchor is not None and anchor.runId is not None and anchor.runId != run_id:
        raise errors.ValidationFailed("'target.runId' must be the run the path names.")
    if anchor is not None and anchor.eventId is not None:
        raise errors.ValidationFailed(
            "'target.eventId' is not supported here: annotate the run or a node of it."
        )
    node_id = anchor.nodeId if anchor is not None else None
    redact = catalog.redactor.redact
    annotation = Annotation(
        annotationId=secrets.token_hex(16),
        target=AnnotationTarget(runId=run_id, nodeId=node_id),
        signal=_redacted(request.signal, redact),
        actor=Actor(principalRef=principal_ref(principal.key_id)),
        note=_redacted_note(request.note, redact),
        createdAt=timestamp(now()),
    )
    async with store.transaction() as uow:
        record = await uow.runs.get(principal.tenant, run_id)
        if record is None:
            raise errors.NotFound("No such run.")
        if node_id is not None:
            await _check_node(uow, catalog, record, node_id)
        await uow.annotations.add(record.handle, _row(annotation))
        if on_insert is not None:
            await on_insert(uow, annotation)
    notifier.announce(run_id, ANNOTATED, _frame_data(annotation))
    return annotation


async def list_annotations(store: Store, principal: Principal, run_id: str) -> list[Annotation]:
    """The caller's run's annotations, oldest first."""
    async with store.reading() as uow:
        record = await uow.runs.get(principal.tenant, run_id)
        if record is None:
            raise errors.NotFound("No such run.")
        docs = await uow.annotations.of_run(record.handle)
    return [Annotation.model_validate(doc) for doc in docs]


async def task_labels(
    store: Store, tenant: str, since: datetime | None = None
) -> list[StoredLabel]:
    """The tenant's pass/fail labels on tasks of its eval runs, oldest first: one per
    annotation, so a task labelled twice has two (the newest is the reviewer's last word).
    What a judge's calibration pairs with its verdicts, by `(run_id, node_id)`."""
    async with store.reading() as uow:
        labels = await uow.annotations.labels(tenant, since)
    return [label for label in labels if label.label in (PASS, FAIL)]


async def _check_node(uow: UnitOfWork, catalog: Catalog, record: OwnedRun, node_id: str) -> None:
    """The anchor must name a node of the run: a task of an eval run's suite, a node of a
    workflow run's workflow."""
    if record.kind is RunKind.EVAL:
        plan = await uow.runs.plan(record.handle)
        tasks = plan.suite.get("tasks") if plan is not None else None
        known = (
            {t.get("taskId") for t in tasks if isinstance(t, dict)}
            if isinstance(tasks, list)
            else set()
        )
        if node_id not in known:
            raise errors.ValidationFailed("'target.nodeId' names no task of this eval run.")
        return
    workflow = catalog.workflows.get(record.workflow_id)
    if workflow is None or node_id not in {node.id for node in workflow.nodes}:
        raise errors.ValidationFailed("'target.nodeId' names no node of this run's workflow.")


def _redacted(signal: Signal, redact: Redact) -> Signal:
    """The signal with its text redacted, held to the same limits: `[redacted]` may be longer
    than what it replaces, and a text over its limit is refused, never cut."""
    try:
        if isinstance(signal, CorrectionSignal):
            return CorrectionSignal(kind="correction", correction=redact(signal.correction))
        if isinstance(signal, LabelSignal):
            return LabelSignal(kind="label", label=redact(signal.label))
    except ValidationError:
        raise errors.ValidationFailed(
            f"The {signal.kind} is too long once the credentials in it are redacted."
        ) from None
    return signal


def _redacted_note(note: str | None, redact: Redact) -> str | None:
    if note is None:
        return None
    kept = redact(note)
    if len(kept) > NOTE_MAX:
        raise errors.ValidationFailed(
            "The note is too long once the credentials in it are redacted."
        )
    return kept


def _row(annotation: Annotation) -> AnnotationRow:
    signal = annotation.signal
    return AnnotationRow(
        annotation_id=annotation.annotationId,
        node_id=annotation.target.nodeId,
        kind=signal.kind,
        label=signal.label if isinstance(signal, LabelSignal) else None,
        doc=annotation.to_wire(),
        created_at=datetime.fromisoformat(annotation.createdAt),
    )


def _frame_data(annotation: Annotation) -> str:
    """The notification's data: the annotation as its payload, under the run's id."""
    body = {"type": ANNOTATED, "runId": annotation.target.runId, "payload": annotation.to_wire()}
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)
