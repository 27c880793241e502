"""Run annotations (RFC 0056): kept beside a run, never in its log, read for its tenant only."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, delete, select
from sqlalchemy.ext.asyncio import AsyncConnection

from wopeval.store._runs import RunHandle
from wopeval.store.tables import run_annotations


@dataclass(frozen=True)
class AnnotationRow:
    """One annotation as it is kept: the wire document and the columns reads filter on."""

    annotation_id: str
    node_id: str | None
    kind: str
    label: str | None
    doc: dict[str, Any]
    created_at: datetime


@dataclass(frozen=True)
class StoredLabel:
    """A `label` annotation on one node (an eval run's task) of one of the tenant's runs."""

    run_id: str
    node_id: str
    label: str
    annotation_id: str
    principal_ref: str
    created_at: datetime


class AnnotationsRepo:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def add(self, run: RunHandle, row: AnnotationRow) -> None:
        await self._connection.execute(
            run_annotations.insert().values(
                run_id=run.run_id,
                annotation_id=row.annotation_id,
                tenant=run.tenant,
                node_id=row.node_id,
                kind=row.kind,
                label=row.label,
                doc=row.doc,
                created_at=row.created_at,
            )
        )

    async def of_run(self, run: RunHandle) -> list[dict[str, Any]]:
        """The run's annotations as the wire shows them, oldest first."""
        result = await self._connection.execute(
            select(run_annotations.c.doc)
            .where(run_annotations.c.run_id == run.run_id)
            .order_by(run_annotations.c.created_at, run_annotations.c.annotation_id)
        )
        return list(result.scalars())

    async def labels(self, tenant: str, since: datetime | None = None) -> list[StoredLabel]:
        """The tenant's node-anchored `label` annotations (created at or after `since`),
        oldest first."""
        where = [
            run_annotations.c.tenant == tenant,
            run_annotations.c.kind == "label",
            run_annotations.c.node_id.is_not(None),
        ]
        if since is not None:
            where.append(run_annotations.c.created_at >= since)
        result = await self._connection.execute(
            select(run_annotations)
            .where(and_(*where))
            .order_by(run_annotations.c.created_at, run_annotations.c.annotation_id)
        )
        return [
            StoredLabel(
                run_id=row.run_id,
                node_id=row.node_id,
                label=row.label,
                annotation_id=row.annotation_id,
                principal_ref=row.doc["actor"]["principalRef"],
                created_at=row.created_at,
            )
            for row in result
        ]

    async def erase(self, run_id: str) -> int:
        """Delete the run's annotations (erasure, engine/runs/erasure.py); how many went."""
        result = await self._connection.execute(
            delete(run_annotations).where(run_annotations.c.run_id == run_id)
        )
        return int(result.rowcount or 0)
