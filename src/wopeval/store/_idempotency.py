"""Idempotency records keyed by (tenant, endpoint, key) (idempotency.md, Layer 1)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from wopeval.store._runs import utc
from wopeval.store.tables import idempotency

IDEMPOTENCY_RETENTION = timedelta(hours=24)
"""How long a key's answer is replayed (idempotency.md: at least 24 h)."""


@dataclass(frozen=True)
class IdempotencyRecord:
    digest: str
    status_code: int | None
    body: str | None
    headers: dict[str, str] | None
    created_at: datetime

    @property
    def in_flight(self) -> bool:
        return self.status_code is None


class IdempotencyRepo:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    def _where(self, tenant: str, endpoint: str, key: str) -> Any:
        return and_(
            idempotency.c.tenant == tenant,
            idempotency.c.endpoint == endpoint,
            idempotency.c.key == key,
        )

    async def claim(
        self, tenant: str, endpoint: str, key: str, digest: str, at: datetime
    ) -> IdempotencyRecord | None:
        """Take the key for this request; None when taken, else the record that holds it."""
        try:
            async with self._connection.begin_nested():
                await self._connection.execute(
                    idempotency.insert().values(
                        tenant=tenant, endpoint=endpoint, key=key, digest=digest, created_at=at
                    )
                )
        except IntegrityError:
            return await self.get(tenant, endpoint, key)
        return None

    async def get(self, tenant: str, endpoint: str, key: str) -> IdempotencyRecord | None:
        result = await self._connection.execute(
            select(idempotency).where(self._where(tenant, endpoint, key))
        )
        row = result.first()
        if row is None:
            return None
        return IdempotencyRecord(
            digest=row.digest,
            status_code=row.status_code,
            body=row.body,
            headers=row.headers,
            created_at=utc(row.created_at),
        )

    async def complete(
        self,
        tenant: str,
        endpoint: str,
        key: str,
        status_code: int,
        body: str,
        headers: dict[str, str],
    ) -> None:
        await self._connection.execute(
            update(idempotency)
            .where(self._where(tenant, endpoint, key))
            .values(status_code=status_code, body=body, headers=headers)
        )

    async def release(self, tenant: str, endpoint: str, key: str) -> None:
        await self._connection.execute(
            delete(idempotency).where(self._where(tenant, endpoint, key))
        )

    async def release_unanswered(self, tenant: str, endpoint: str, key: str) -> None:
        """Release the key unless its answer is already kept (then it must stay)."""
        await self._connection.execute(
            delete(idempotency).where(
                self._where(tenant, endpoint, key), idempotency.c.status_code.is_(None)
            )
        )

    async def release_all_unanswered(self) -> int:
        """Release every key still in flight; only a database's owner, at start-up, may.

        A run is inserted in the same transaction that keeps its key's answer, so
        a key found unanswered when no request is alive has no run: it is free.
        """
        result = await self._connection.execute(
            delete(idempotency).where(idempotency.c.status_code.is_(None))
        )
        return int(result.rowcount or 0)

    async def release_unanswered_before(self, cutoff: datetime) -> int:
        """Release the keys in flight since before `cutoff` (queue mode: several processes
        serve one database, so a key is only known dead by its age)."""
        result = await self._connection.execute(
            delete(idempotency).where(
                idempotency.c.status_code.is_(None), idempotency.c.created_at < cutoff
            )
        )
        return int(result.rowcount or 0)

    async def purge_before(self, cutoff: datetime) -> None:
        await self._connection.execute(delete(idempotency).where(idempotency.c.created_at < cutoff))
