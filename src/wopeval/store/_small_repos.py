"""Small aggregates: API keys, the conformance counter, tenant suites, derived fixtures."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, delete, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from wopeval.store._runs import RunHandle
from wopeval.store.tables import api_keys, counters, derived_fixtures, suites


class KeysRepo:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def all(self) -> list[tuple[str, str, str]]:
        """Every `(key_hash, key_id, tenant)`; only the authenticator reads across tenants."""
        result = await self._connection.execute(
            select(api_keys.c.key_hash, api_keys.c.key_id, api_keys.c.tenant)
        )
        return [(row.key_hash, row.key_id, row.tenant) for row in result]

    async def ensure(self, key_hash: str, key_id: str, tenant: str, at: datetime) -> None:
        existing = await self._connection.execute(
            select(api_keys.c.tenant).where(api_keys.c.key_hash == key_hash)
        )
        current = existing.scalar_one_or_none()
        if current is None:
            await self._connection.execute(
                api_keys.insert().values(
                    key_hash=key_hash, key_id=key_id, tenant=tenant, created_at=at
                )
            )
        elif current != tenant:
            await self._connection.execute(
                update(api_keys).where(api_keys.c.key_hash == key_hash).values(tenant=tenant)
            )

    async def remove(self, key_hash: str) -> None:
        await self._connection.execute(delete(api_keys).where(api_keys.c.key_hash == key_hash))


class CountersRepo:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def read(self, tenant: str, key: str) -> int:
        result = await self._connection.execute(
            select(counters.c.count).where(and_(counters.c.tenant == tenant, counters.c.key == key))
        )
        return int(result.scalar_one_or_none() or 0)

    async def increment(self, tenant: str, key: str) -> int:
        where = and_(counters.c.tenant == tenant, counters.c.key == key)
        result = await self._connection.execute(
            update(counters).where(where).values(count=counters.c.count + 1)
        )
        if not result.rowcount:
            try:
                async with self._connection.begin_nested():
                    await self._connection.execute(
                        counters.insert().values(tenant=tenant, key=key, count=1)
                    )
                return 1
            except IntegrityError:
                # A concurrent first increment won the insert; count on top of it.
                await self._connection.execute(
                    update(counters).where(where).values(count=counters.c.count + 1)
                )
        return await self.read(tenant, key)


class SuitesRepo:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def put(
        self, tenant: str, suite_id: str, version: str, document: dict[str, Any], at: datetime
    ) -> bool:
        """Store a version; False when that exact version already exists for the tenant."""
        try:
            async with self._connection.begin_nested():
                await self._connection.execute(
                    suites.insert().values(
                        tenant=tenant,
                        suite_id=suite_id,
                        version=version,
                        document=document,
                        created_at=at,
                    )
                )
        except IntegrityError:
            return False
        return True

    async def get(self, tenant: str, suite_id: str, version: str) -> dict[str, Any] | None:
        result = await self._connection.execute(
            select(suites.c.document).where(
                and_(
                    suites.c.tenant == tenant,
                    suites.c.suite_id == suite_id,
                    suites.c.version == version,
                )
            )
        )
        document: dict[str, Any] | None = result.scalar_one_or_none()
        return document

    async def list(self, tenant: str) -> list[dict[str, Any]]:
        result = await self._connection.execute(
            select(suites.c.document)
            .where(suites.c.tenant == tenant)
            .order_by(suites.c.suite_id, suites.c.created_at)
        )
        return list(result.scalars())


class DerivedFixturesRepo:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def store(self, eval_run_id: str, copies: Sequence[dict[str, Any]]) -> None:
        """Keep each task's derived entries with the eval run, keyed to their source run."""
        if copies:
            await self._connection.execute(
                derived_fixtures.insert(),
                [{"eval_run_id": eval_run_id, **copy} for copy in copies],
            )

    async def rows(self, eval_run: RunHandle) -> list[dict[str, Any]]:
        result = await self._connection.execute(
            select(
                derived_fixtures.c.task_id,
                derived_fixtures.c.source_run_id,
                derived_fixtures.c.entries,
                derived_fixtures.c.model_entries,
                derived_fixtures.c.erased_at,
            ).where(derived_fixtures.c.eval_run_id == eval_run.run_id)
        )
        return [dict(row) for row in result.mappings()]

    async def takers(self, source_run_id: str) -> list[str]:
        """Eval runs that took fixtures from `source_run_id`."""
        result = await self._connection.execute(
            select(derived_fixtures.c.eval_run_id).where(
                derived_fixtures.c.source_run_id == source_run_id
            )
        )
        return sorted(set(result.scalars()))

    async def erase_copies(self, run_id: str, at: datetime) -> int:
        """Erase the copies taken from the run and those the run was served (an eval run's
        own, and a replay's of its source's); returns how many were still held."""
        result = await self._connection.execute(
            update(derived_fixtures)
            .where(
                and_(
                    or_(
                        derived_fixtures.c.source_run_id == run_id,
                        derived_fixtures.c.eval_run_id == run_id,
                    ),
                    derived_fixtures.c.erased_at.is_(None),
                )
            )
            .values(entries=None, model_entries=None, erased_at=at)
        )
        return int(result.rowcount or 0)


async def replace_keys(repo: KeysRepo, entries: list[tuple[str, str, str]], at: datetime) -> None:
    """Make the stored keys exactly `entries` (hash, key id, tenant)."""
    keep = {key_hash for key_hash, _, _ in entries}
    for key_hash, _, _ in await repo.all():
        if key_hash not in keep:
            await repo.remove(key_hash)
    for key_hash, kid, tenant in entries:
        await repo.ensure(key_hash, kid, tenant, at)


async def copy_derived(repo: DerivedFixturesRepo, source: RunHandle, target_run_id: str) -> None:
    """A replay keeps its own copy of the derived fixtures, erased with their source's."""
    copies = await repo.rows(source)
    await repo.store(target_run_id, copies)
