"""Reading a bundle: the whole file checked before the store is touched.

A bundle is read into memory and checked whole — its format, its manifest, every
member against its checksum, every row against the importing store's tables, the
run each row belongs to and every run it names — so a bad bundle is refused, with
what is wrong, before anything is written. Older formats are upgraded here, in one
versioned reader, to the current shape; the rest of the importer sees only that.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError
from sqlalchemy import Column

from wopeval.store._bundle_ids import Retenant
from wopeval.store._bundle_records import (
    RUN_RECORDS,
    BundleError,
    RecordKind,
    ended,
    primary_key,
    restored,
)
from wopeval.wire import ids

FORMAT = "wopeval.recordings/2"
"""The bundle format this host writes."""
FORMAT_1 = "wopeval.recordings/1"
"""The first format, still read: it carried no model exchanges and no tool listings, and
kept a run's plan in its run row."""
MANIFEST = "manifest.json"

_MEMBERS = {
    FORMAT_1: ("runs", "events", "tool_calls", "invocations", "task_trials", "derived_fixtures"),
    FORMAT: tuple(kind.name for kind in RUN_RECORDS),
}
"""The members each run has, by format."""

Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


class Origin(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str
    """Where the runs were recorded (a host name; never a database credential)."""
    tenant: str
    """The tenant the runs belonged to there."""


class ManifestRun(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{32}$")]
    """The run's hex id: its id without the tenant part."""
    kind: str
    files: dict[str, Sha256]
    """SHA-256 of each of the run's members, by record kind."""


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    format: str
    origin: Origin
    exportedAt: str
    runs: list[ManifestRun] = Field(min_length=1)


@dataclass(frozen=True)
class BundledRun:
    hex_id: str
    records: dict[str, list[dict[str, Any]]]
    """Each record kind's rows, as the store's tables take them, still under the origin."""


@dataclass(frozen=True)
class Bundle:
    manifest: Manifest
    runs: tuple[BundledRun, ...]


def read_bundle(path: Path) -> Bundle:
    """The bundle at `path`, checked whole; `BundleError` says what is wrong with it."""
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise BundleError(f"{path} is not a recordings bundle: {exc}") from exc
    with archive:
        manifest = _manifest(archive, path)
        runs = tuple(
            BundledRun(run.id, _run_records(archive, manifest, run)) for run in manifest.runs
        )
    _check_whole(manifest, runs)
    return Bundle(manifest, runs)


def _manifest(archive: zipfile.ZipFile, path: Path) -> Manifest:
    try:
        document = json.loads(archive.read(MANIFEST))
    except (KeyError, ValueError) as exc:
        raise BundleError(f"{path} has no readable {MANIFEST}") from exc
    found = document.get("format") if isinstance(document, dict) else None
    if found not in _MEMBERS:
        raise BundleError(
            f"{path} is in format {found!r}; this host reads {' and '.join(map(repr, _MEMBERS))}"
        )
    try:
        manifest = Manifest.model_validate(document)
    except ValidationError as exc:
        raise BundleError(f"{MANIFEST} of {path} is not a manifest: {exc.errors()[0]}") from None
    if not ids.is_tenant_id(manifest.origin.tenant):
        raise BundleError(f"{MANIFEST} names no tenant: {manifest.origin.tenant!r}")
    hex_ids = [run.id for run in manifest.runs]
    if len(set(hex_ids)) != len(hex_ids):
        raise BundleError(f"{MANIFEST} lists a run twice")
    return manifest


def _run_records(
    archive: zipfile.ZipFile, manifest: Manifest, run: ManifestRun
) -> dict[str, list[dict[str, Any]]]:
    expected = _MEMBERS[manifest.format]
    if unknown := sorted(set(run.files) - set(expected)):
        raise BundleError(f"run {run.id} has members this format has not: {unknown}")
    records: dict[str, list[Any]] = {}
    for name in expected:
        member = f"runs/{run.id}/{name}.jsonl"
        if name not in run.files:
            raise BundleError(f"{MANIFEST} lists no {member}")
        try:
            content = archive.read(member)
        except KeyError:
            raise BundleError(f"the bundle lacks {member}") from None
        if hashlib.sha256(content).hexdigest() != run.files[name]:
            raise BundleError(f"{member} does not match its checksum")
        try:
            records[name] = [json.loads(line) for line in content.splitlines() if line]
        except ValueError as exc:
            raise BundleError(f"{member} is not JSON lines: {exc}") from None
    if manifest.format == FORMAT_1:
        records = _upgrade_format_1(records)
    return records


def _upgrade_format_1(records: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """Format 1 kept a run's plan in its run row, and carried no model exchanges and
    no tool listings."""
    runs = [dict(row) if isinstance(row, dict) else row for row in records["runs"]]
    plans = [
        {"run_id": row.get("run_id"), "plan": plan}
        for row in runs
        if isinstance(row, dict) and (plan := row.pop("plan", None)) is not None
    ]
    later: dict[str, list[Any]] = {kind.name: [] for kind in RUN_RECORDS}
    return {**later, **records, "runs": runs, "run_plans": plans}


def _check_whole(manifest: Manifest, runs: tuple[BundledRun, ...]) -> None:
    """Every row: its table's shape, its run, the runs it names, no erased content, once."""
    origin = manifest.origin.tenant
    names_origin_runs = Retenant(origin, origin)
    seen: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {k.name: {} for k in RUN_RECORDS}
    for run in runs:
        run_id = f"{origin}/{run.hex_id}"
        for kind in RUN_RECORDS:
            member = f"runs/{run.hex_id}/{kind.name}.jsonl"
            rows = run.records[kind.name]
            for index, row in enumerate(rows):
                where = f"{member} line {index + 1}"
                rows[index] = checked = _checked_row(kind, row, where, run, names_origin_runs)
                held = seen[kind.name].setdefault(primary_key(kind, checked), checked)
                # A record the tenant keeps once travels, the same, with each run naming it.
                if held is not checked and (kind.named_by is None or held != checked):
                    raise BundleError(f"{where}: the bundle holds this {kind.name} row twice")
        if len(run.records["runs"]) != 1:
            count = len(run.records["runs"])
            raise BundleError(f"runs/{run.hex_id}/runs.jsonl holds {count} run rows, not one")
        status = run.records["runs"][0]["status"]
        if not ended(status):
            raise BundleError(f"run {run_id} has not ended (status {status!r})")


def _checked_row(
    kind: RecordKind, row: Any, where: str, run: BundledRun, names_origin_runs: Retenant
) -> dict[str, Any]:
    values = restored(kind, row, where)
    run_id = f"{names_origin_runs.origin}/{run.hex_id}"
    if kind.named_by is None and values[kind.run_column] != run_id:
        raise BundleError(f"{where}: a row of run {values[kind.run_column]!r}, not of {run_id}")
    if values.get("erased_at") is not None:
        raise BundleError(f"{where}: erased tool content of run {run_id}")
    try:
        names_origin_runs.row(kind.name, values)
        if (named_by := kind.named_by) is not None:
            _check_named(kind, named_by, values, run)
    except BundleError as error:
        raise BundleError(f"{where}: {error}") from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise BundleError(
            f"{where}: this {kind.name} row is not one this host reads ({exc!r})"
        ) from None
    return values


def _check_named(
    kind: RecordKind, named_by: Column[Any], row: dict[str, Any], run: BundledRun
) -> None:
    """A record the tenant keeps once travels only with a run that names it, and one
    named by its content's digest must have that content."""
    key = named_by.name
    # RUN_RECORDS lists the naming records first: their rows are checked already.
    if row[key] not in {named[key] for named in run.records[named_by.table.name]}:
        raise BundleError(f"run {run.hex_id} names no such {kind.name} row")
    if kind.digest is not None and kind.digest(row) != row[key]:
        raise BundleError(f"its {key} is not that of its content")
