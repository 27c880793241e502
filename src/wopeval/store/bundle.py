"""Recording bundles as the store keeps them: the rows of runs, written to and read from a zip.

A bundle is one zip file: `manifest.json` (format, origin, export time, the runs
and a SHA-256 of every other member) and, per run, one JSON-lines member per kind
of record an eval reads back (store/_bundle_records.py `RUN_RECORDS`): the run row
and its plan, its event log, its as-executed tool and model exchanges, its
invocations, the MCP tool listings it was offered, its trial details and, for eval
runs, the derived copies it was served.

This module only moves rows: it selects a run's rows, writes them to a bundle,
reads a bundle back as rows the tables take (checked whole as rows by
store/_bundle_read.py) and inserts rows in the caller's transaction, all or none.
Which runs may travel and what their rows say (an ended run, a whole log, the
tenant they move to and the run ids inside their documents) is decided a layer up,
in recordings/.
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import and_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from wopeval.store._bundle_read import (
    FORMAT,
    LIMITS,
    MANIFEST,
    Bundle,
    BundledRun,
    Limits,
    Manifest,
    ManifestRun,
    Origin,
    member_name,
    placed,
    read_rows,
)
from wopeval.store._bundle_records import RUN_RECORDS, BundleError, RecordKind, exported
from wopeval.store._rows import ignoring_duplicates
from wopeval.store.tables import runs
from wopeval.wire.json_text import dumped

Records = dict[str, list[dict[str, Any]]]
"""Rows by record kind (`RecordKind.name`)."""


async def run_rows(connection: AsyncConnection, tenant: str, run_id: str) -> Records:
    """Every record of the tenant's run, by kind, as the store holds it (no run row: no run)."""
    return {kind.name: await _rows(connection, kind, tenant, run_id) for kind in RUN_RECORDS}


def write_rows(path: Path, origin: Origin, at: datetime, runs: Sequence[BundledRun]) -> None:
    """A new bundle at `path` holding the runs' records, each run's as one member per kind."""
    members: dict[str, bytes] = {}
    listed: list[ManifestRun] = []
    for run in runs:
        files = {}
        for name, rows in run.records.items():
            member = member_name(run.hex_id, name)
            members[member] = _jsonl(rows)
            files[name] = hashlib.sha256(members[member]).hexdigest()
        listed.append(ManifestRun(id=run.hex_id, kind=run.records["runs"][0]["kind"], files=files))
    manifest = Manifest(format=FORMAT, origin=origin, exportedAt=at.isoformat(), runs=listed)
    # Written aside, then renamed: a bundle at `path` is always a whole one.
    partial = path.with_name(f".{path.name}.partial")
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(MANIFEST, manifest.model_dump_json(indent=2))
        for member, content in members.items():
            archive.writestr(member, content)
    os.replace(partial, path)


async def insert_rows(
    connection: AsyncConnection, run_ids: Collection[str], records: Mapping[str, list[Any]]
) -> None:
    """Insert the records of the new runs `run_ids` in the caller's transaction; refused
    when one of the runs, or a row of theirs, is in the store already."""
    present = await connection.execute(
        select(runs.c.run_id).where(runs.c.run_id.in_(list(run_ids)))
    )
    if (held := present.scalars().first()) is not None:
        raise BundleError(f"run {held} is already in this store; nothing was imported")
    for kind in RUN_RECORDS:
        insert = kind.table.insert()
        if kind.named_by is not None:
            # A record the tenant keeps once may travel with several runs, and be here already.
            insert = ignoring_duplicates(connection, kind.table)
        if rows := records[kind.name]:
            try:
                await connection.execute(insert, rows)
            except IntegrityError:
                # A row left behind in this store under one of these runs' ids; the
                # caller's transaction is rolled back, so nothing of the bundle stays.
                raise BundleError(
                    f"the {kind.name} of these runs clash with rows already in this store; "
                    "nothing was imported"
                ) from None


async def _rows(
    connection: AsyncConnection, kind: RecordKind, tenant: str, run_id: str
) -> list[dict[str, Any]]:
    table = kind.table
    if kind.named_by is None:
        which = table.c[kind.run_column] == run_id
    else:
        named = select(kind.named_by).where(kind.named_by.table.c.run_id == run_id)
        which = and_(table.c.tenant == tenant, table.c[kind.named_by.name].in_(named))
    result = await connection.execute(select(table).where(which).order_by(*table.primary_key))
    return [dict(row) for row in result.mappings()]


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    # Recorded values keep their keys' order: an LLM agent is handed a tool's result as
    # JSON text, and a replayed model request must be the one it was, byte for byte.
    return b"".join((dumped(exported(row)) + "\n").encode() for row in rows)


__all__ = [
    "LIMITS",
    "RUN_RECORDS",
    "Bundle",
    "BundleError",
    "BundledRun",
    "Limits",
    "Origin",
    "RecordKind",
    "Records",
    "insert_rows",
    "placed",
    "read_rows",
    "run_rows",
    "write_rows",
]
