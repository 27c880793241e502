"""A store transaction lands whole or not at all, whichever way its statements ran: on the
driver's connection (the log writer's, store/_driver.py), through SQLAlchemy, or both. On
SQLite a transaction of driver statements alone is committed on the driver's connection
(store/__init__.py `_sqlite_transaction`), so each of these cases is its own path."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import insert, select

from _backends import Backend
from wopeval.store import Store, UnitOfWork, sqlite_url
from wopeval.store.tables import events


class _Abandoned(Exception):
    """What a test raises inside a transaction to abandon it."""


def _row(run_id: str, sequence: int) -> dict[str, object]:
    return {"run_id": run_id, "sequence": sequence, "type": "t", "doc": f'{{"n":{sequence}}}'}


async def _by_driver(uow: UnitOfWork, run_id: str, sequence: int) -> None:
    await uow.events.append([_row(run_id, sequence)])


async def _by_sqlalchemy(uow: UnitOfWork, run_id: str, sequence: int) -> None:
    await uow.connection.execute(insert(events).values(**_row(run_id, sequence)))


async def _stored(store: Store, run_id: str) -> list[int]:
    async with store.reading() as uow:
        rows = await uow.connection.execute(
            select(events.c.sequence).where(events.c.run_id == run_id).order_by(events.c.sequence)
        )
        return [row.sequence for row in rows]


WAYS = {
    "driver": (_by_driver, _by_driver),
    "sqlalchemy": (_by_sqlalchemy, _by_sqlalchemy),
    "driver-then-sqlalchemy": (_by_driver, _by_sqlalchemy),
    "sqlalchemy-then-driver": (_by_sqlalchemy, _by_driver),
}


@pytest.mark.parametrize("way", WAYS)
def test_a_transaction_lands_whole_or_not_at_all(
    backend: Backend, tmp_path: Path, way: str
) -> None:
    first, second = WAYS[way]

    async def scenario() -> None:
        store = await Store.open(backend.new_database() or sqlite_url(tmp_path))
        try:

            async def abandon() -> None:
                async with store.transaction() as uow:
                    await first(uow, "abandoned", 0)
                    await second(uow, "abandoned", 1)
                    raise _Abandoned

            with pytest.raises(_Abandoned):
                await abandon()
            # The next transaction is a new one: it does not carry the abandoned rows.
            async with store.transaction() as uow:
                await first(uow, "landed", 0)
                await second(uow, "landed", 1)
            async with store.transaction() as uow:
                await first(uow, "landed", 2)
            assert await _stored(store, "abandoned") == []
            assert await _stored(store, "landed") == [0, 1, 2]
        finally:
            await store.close()

    asyncio.run(scenario())


def test_a_refused_statement_abandons_its_whole_transaction(
    backend: Backend, tmp_path: Path
) -> None:
    async def scenario() -> None:
        store = await Store.open(backend.new_database() or sqlite_url(tmp_path))
        try:
            async with store.transaction() as uow:
                await _by_driver(uow, "run", 0)

            async def take_a_taken_key() -> None:
                async with store.transaction() as uow:
                    await _by_driver(uow, "run", 1)
                    await _by_driver(uow, "run", 0)

            with pytest.raises(Exception, match=r"(?i)unique|duplicate"):
                await take_a_taken_key()
            async with store.transaction() as uow:
                await _by_driver(uow, "run", 2)
            assert await _stored(store, "run") == [0, 2]
        finally:
            await store.close()

    asyncio.run(scenario())
