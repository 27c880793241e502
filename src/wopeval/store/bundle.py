"""Recording bundles: runs carried from one store to another (operator tooling, never a wire route).

A bundle is one zip file: `manifest.json` (format, origin, export time, the runs
and a SHA-256 of every other member) and, per run, one JSON-lines member per kind
of record an eval reads back (store/_bundle_records.py `RUN_RECORDS`): the run row
and its plan, its event log, its as-executed tool and model exchanges, its
invocations, the MCP tool listings it was offered, its trial details and, for eval
runs, the derived copies it was served.

Import writes the runs under the importing tenant, keeping their hex ids, so a
`{taskId: runId}` fixture-runs map stays valid once its tenant part is swapped;
the imported runs are RFC 0252 sources (model replay included) and RFC 0251
baselines there like any other, and erasable like any other. A bundle is outside
the origin's erasure (docs/recordings.md), so export refuses a run whose content
was erased, and import refuses a bundle that holds erased content. The bundle is
read and checked whole (store/_bundle_read.py) before the import writes a row.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import and_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from wopeval.store._bundle_ids import Retenant
from wopeval.store._bundle_read import (
    FORMAT,
    MANIFEST,
    Bundle,
    Manifest,
    ManifestRun,
    Origin,
    read_bundle,
)
from wopeval.store._bundle_records import (
    RUN_RECORDS,
    BundleError,
    RecordKind,
    ended,
    exported,
)
from wopeval.store._rows import ignoring_duplicates
from wopeval.store.tables import runs
from wopeval.wire import ids


@dataclass(frozen=True)
class Exported:
    path: Path
    run_ids: list[str]


@dataclass(frozen=True)
class Imported:
    run_ids: list[str]
    origin: Origin


async def export_runs(
    connection: AsyncConnection,
    run_ids: Iterable[str],
    origin: Origin,
    at: datetime,
    path: Path,
) -> Exported:
    """Write the runs (all of `origin.tenant`) to a new bundle at `path`."""
    members: dict[str, bytes] = {}
    listed: list[ManifestRun] = []
    wanted = list(dict.fromkeys(run_ids))
    for run_id in wanted:
        tenant, _, hex_id = run_id.partition("/")
        if tenant != origin.tenant:
            raise BundleError(f"{run_id} is not a run of tenant {origin.tenant!r}")
        records = {
            kind.name: await _rows(connection, kind, origin.tenant, run_id) for kind in RUN_RECORDS
        }
        if not records["runs"]:
            raise BundleError(f"no run {run_id} in this store")
        if not ended(records["runs"][0]["status"]):
            raise BundleError(f"{run_id} is still active; export it once it has ended")
        if any(row.get("erased_at") is not None for rows in records.values() for row in rows):
            raise BundleError(
                f"the tool content of {run_id} was erased; an erased run is never exported"
            )
        files = {}
        for name, rows in records.items():
            member = f"runs/{hex_id}/{name}.jsonl"
            members[member] = _jsonl(rows)
            files[name] = hashlib.sha256(members[member]).hexdigest()
        listed.append(ManifestRun(id=hex_id, kind=records["runs"][0]["kind"], files=files))
    manifest = Manifest(format=FORMAT, origin=origin, exportedAt=at.isoformat(), runs=listed)
    # Written aside, then renamed: a bundle at `path` is always a whole one.
    partial = path.with_name(f".{path.name}.partial")
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(MANIFEST, manifest.model_dump_json(indent=2))
        for member, content in members.items():
            archive.writestr(member, content)
    os.replace(partial, path)
    return Exported(path, wanted)


async def import_bundle(connection: AsyncConnection, bundle: Bundle, tenant: str) -> Imported:
    """Insert a read bundle's runs under `tenant`, in the caller's transaction."""
    if not ids.is_tenant_id(tenant):
        raise BundleError(f"{tenant!r} is not a tenant id")
    retenant = Retenant(bundle.manifest.origin.tenant, tenant)
    run_ids = [f"{tenant}/{run.hex_id}" for run in bundle.runs]
    present = await connection.execute(select(runs.c.run_id).where(runs.c.run_id.in_(run_ids)))
    if (held := present.scalars().first()) is not None:
        raise BundleError(f"run {held} is already in this store; nothing was imported")
    for kind in RUN_RECORDS:
        rows = [
            retenant.row(kind, row, run.hex_id)
            for run in bundle.runs
            for row in run.records[kind.name]
        ]
        insert = kind.table.insert()
        if kind.named_by is not None:
            # A record the tenant keeps once may travel with several runs, and be here already.
            insert = ignoring_duplicates(connection, kind.table)
        if rows:
            try:
                await connection.execute(insert, rows)
            except IntegrityError:
                # A row left behind in this store under one of these runs' ids; the
                # caller's transaction is rolled back, so nothing of the bundle stays.
                raise BundleError(
                    f"the {kind.name} of these runs clash with rows already in this store; "
                    "nothing was imported"
                ) from None
    return Imported(run_ids, bundle.manifest.origin)


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
    return b"".join(json.dumps(exported(row), ensure_ascii=False).encode() + b"\n" for row in rows)


async def tagged_run_ids(connection: AsyncConnection, tenant: str, tag: str) -> list[str]:
    """The tenant's ended runs carrying `tag`, oldest first."""
    result = await connection.execute(
        select(runs.c.run_id, runs.c.request, runs.c.status)
        .where(runs.c.tenant == tenant)
        .order_by(runs.c.created_seq)
    )
    return [
        row.run_id
        for row in result
        if tag in (row.request or {}).get("tags", []) and ended(row.status)
    ]


__all__ = [
    "FORMAT",
    "Bundle",
    "BundleError",
    "Exported",
    "Imported",
    "Origin",
    "export_runs",
    "import_bundle",
    "read_bundle",
    "tagged_run_ids",
]
