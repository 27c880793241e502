"""Export and import: recorded runs carried from one store to another in a bundle.

Import writes the runs under the importing tenant, keeping their hex ids, so a
`{taskId: runId}` fixture-runs map stays valid once its tenant part is swapped;
the imported runs are RFC 0252 sources (model replay included) and RFC 0251
baselines there like any other, and erasable like any other. A bundle is outside
the origin's erasure (docs/recordings.md), so export refuses a run whose content
was erased, and import refuses a bundle that holds erased content. The bundle is
read and checked whole (as rows by the store, then as runs by recordings/_checks.py)
before the import writes a row.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncConnection

from wopeval.recordings._checks import check_bundle, ended, erased
from wopeval.recordings._retenant import Retenant
from wopeval.store import RunFilter, RunsRepo, bundle
from wopeval.wire import ids

_PAGE = 500
"""Runs read at a time when listing a tenant's tagged runs."""


@dataclass(frozen=True)
class Exported:
    path: Path
    run_ids: list[str]


@dataclass(frozen=True)
class Imported:
    run_ids: list[str]
    origin: bundle.Origin


def read_bundle(path: Path, limits: bundle.Limits = bundle.LIMITS) -> bundle.Bundle:
    """The bundle at `path`, checked whole; `BundleError` says what is wrong with it."""
    read = bundle.read_rows(path, limits)
    check_bundle(read)
    return read


async def export_runs(
    connection: AsyncConnection,
    run_ids: Iterable[str],
    origin: bundle.Origin,
    at: datetime,
    path: Path,
) -> Exported:
    """Write the runs (all of `origin.tenant`) to a new bundle at `path`."""
    listed: list[bundle.BundledRun] = []
    wanted = list(dict.fromkeys(run_ids))
    for run_id in wanted:
        tenant, _, hex_id = run_id.partition("/")
        if tenant != origin.tenant:
            raise bundle.BundleError(f"{run_id} is not a run of tenant {origin.tenant!r}")
        records = await bundle.run_rows(connection, origin.tenant, run_id)
        if not records["runs"]:
            raise bundle.BundleError(f"no run {run_id} in this store")
        if not ended(records["runs"][0]["status"]):
            raise bundle.BundleError(f"{run_id} is still active; export it once it has ended")
        if erased(records):
            raise bundle.BundleError(
                f"the tool content of {run_id} was erased; an erased run is never exported"
            )
        listed.append(bundle.BundledRun(hex_id, records))
    bundle.write_rows(path, origin, at, listed)
    return Exported(path, wanted)


async def import_bundle(connection: AsyncConnection, read: bundle.Bundle, tenant: str) -> Imported:
    """Insert a read bundle's runs under `tenant`, in the caller's transaction."""
    if not ids.is_tenant_id(tenant):
        raise bundle.BundleError(f"{tenant!r} is not a tenant id")
    retenant = Retenant(read.manifest.origin.tenant, tenant)
    records = {
        kind.name: [
            retenant.row(kind, row, run.hex_id)
            for run in read.runs
            for row in run.records[kind.name]
        ]
        for kind in bundle.RUN_RECORDS
    }
    run_ids = [f"{tenant}/{run.hex_id}" for run in read.runs]
    await bundle.insert_rows(connection, run_ids, records)
    return Imported(run_ids, read.manifest.origin)


async def tagged_run_ids(connection: AsyncConnection, tenant: str, tag: str) -> list[str]:
    """The tenant's ended runs carrying `tag`, oldest first."""
    repo, tagged = RunsRepo(connection), RunFilter(tag=tag)
    newest_first: list[str] = []
    before: int | None = None
    while page := await repo.page(tenant, limit=_PAGE, before_seq=before, where=tagged):
        newest_first += [run.run_id for run in page if run.status.is_terminal]
        before = page[-1].created_seq
    return newest_first[::-1]
