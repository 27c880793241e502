"""The store's run lookups that take a tenant answer nothing of another tenant's runs, even
given their ids.

A route refuses a run id of another tenant before any lookup (its tenant segment,
wire/ids.py: tests/e2e/test_tenants.py), so these filters are the second wall: the one a
route that ever passes an id it did not check that way would meet. Each is checked here,
at the store, where deleting it is seen."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from wopeval.store import Store
from wopeval.wire.runs import RunStatus

from ._store import TENANT, new_record, open_store

RIVAL = "rival"


async def _runs_of_acme(store: Store) -> tuple[str, str]:
    """An acme run and a replay of it: (source id, replay id)."""
    source = new_record()
    replay = replace(new_record(), parent_run_id=source.run_id)
    async with store.transaction() as uow:
        await uow.runs.insert(source)
        await uow.runs.insert(replay)
    return source.run_id, replay.run_id


async def test_another_tenants_run_is_found_by_no_tenant_lookup(tmp_path: Path) -> None:
    async with open_store(tmp_path) as store:
        source, replay = await _runs_of_acme(store)
        async with store.transaction() as uow:
            assert await uow.runs.get(TENANT, source) is not None
            assert await uow.runs.get(RIVAL, source) is None

            assert set(await uow.runs.states(TENANT, [source, replay])) == {source, replay}
            assert await uow.runs.states(RIVAL, [source, replay]) == {}

            assert await uow.runs.lock(TENANT, source, {RunStatus.RUNNING}) is not None
            assert await uow.runs.lock(RIVAL, source, {RunStatus.RUNNING}) is None

            assert await uow.runs.children(TENANT, source) == [replay]
            assert await uow.runs.children(RIVAL, source) == []
