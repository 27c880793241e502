"""A judge's calibrations (docs/graders.md, "Calibration"), kept and read for their tenant only."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import and_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from wopeval.store._rows import shallow_fields
from wopeval.store.tables import judge_calibrations


@dataclass(frozen=True)
class CalibrationRow:
    """One calibration: the columns the gate reads, and the report as the wire shows it."""

    calibration_id: str
    tenant: str
    judge_id: str
    digest: str
    labels: int
    kappa: float | None
    report: dict[str, Any]
    created_at: datetime


class CalibrationsRepo:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def add(self, row: CalibrationRow) -> None:
        # The row's fields are the table's columns, one for one.
        await self._connection.execute(judge_calibrations.insert(), shallow_fields(row))

    async def latest(self, tenant: str, judge_id: str, digest: str) -> CalibrationRow | None:
        """The tenant's newest calibration of the judge at this digest (another digest's
        never counts: a changed prompt or model is another judge)."""
        c = judge_calibrations.c
        result = await self._connection.execute(
            select(judge_calibrations)
            .where(and_(c.tenant == tenant, c.judge_id == judge_id, c.digest == digest))
            .order_by(c.created_at.desc(), c.calibration_id.desc())
            .limit(1)
        )
        row = result.first()
        if row is None:
            return None
        return CalibrationRow(
            calibration_id=row.calibration_id,
            tenant=row.tenant,
            judge_id=row.judge_id,
            digest=row.digest,
            labels=row.labels,
            kappa=row.kappa,
            report=row.report,
            created_at=row.created_at,
        )
