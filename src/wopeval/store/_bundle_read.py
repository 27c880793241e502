"""Reading a bundle: the whole file checked, as rows, before the store is touched.

A bundle is checked whole — its members' sizes against `Limits` before a byte is
inflated, its format, its manifest, every member against its checksum (hashed as
it streams, never read whole), every row against the importing store's tables,
the run each row belongs to, the records it names and each run's one run row —
so a bad bundle is refused, with what is wrong, before anything is written. Its
checksums are only a guard against damage: whoever edits a bundle can recompute
them, so nothing here trusts a row for more than what the checks prove. Older
formats are upgraded here, in one versioned reader, to the current shape; the
rest of the importer sees only that. What the rows say (the runs they name, each
run's event log and status) is checked a layer up, in recordings/.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError
from sqlalchemy import Column

from wopeval.store._bundle_records import (
    RUN_RECORDS,
    BundleError,
    RecordKind,
    primary_key,
    restored,
)
from wopeval.wire import ids

FORMAT = "wopeval.recordings/3"
"""The bundle format this host writes."""
FORMAT_2 = "wopeval.recordings/2"
"""The second format, still read: it carried no annotations."""
FORMAT_1 = "wopeval.recordings/1"
"""The first format, still read: it carried no model exchanges and no tool listings, and
kept a run's plan in its run row."""
MANIFEST = "manifest.json"

_MEMBERS = {
    FORMAT_1: ("runs", "events", "tool_calls", "invocations", "task_trials", "derived_fixtures"),
    FORMAT_2: tuple(kind.name for kind in RUN_RECORDS if kind.name != "annotations"),
    FORMAT: tuple(kind.name for kind in RUN_RECORDS),
}
"""The members each run has, by format."""

_CHUNK = 1 << 20
"""Bytes inflated at a time: what a member's hash and rows are built from."""


@dataclass(frozen=True)
class Limits:
    """How much of a bundle is read. Each member's declared size is checked against
    these before anything is inflated, and what is inflated is counted as it streams."""

    member_bytes: int = 256 * 2**20
    """The most one member (the manifest included) may inflate to."""
    bundle_bytes: int = 2**30
    """The most all the members together may inflate to."""
    ratio: int = 200
    """The most a member of `ratio_floor` bytes or more may inflate, per byte stored."""
    ratio_floor: int = 2**20
    """Below this size a member's ratio is not held against it: a short run of one
    character deflates far, and a member this small costs nothing to read."""


LIMITS = Limits()

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


def read_rows(path: Path, limits: Limits = LIMITS) -> Bundle:
    """The bundle at `path`, its file and every row checked; `BundleError` says what is wrong."""
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile, ValueError, EOFError) as exc:
        raise BundleError(f"{path} is not a recordings bundle: {exc}") from None
    with archive:
        members = _Members(archive, limits)
        manifest = _manifest(members, path)
        listed = {MANIFEST} | {
            member_name(run.id, name) for run in manifest.runs for name in _MEMBERS[manifest.format]
        }
        if unlisted := sorted(members.names - listed):
            # Zip-slip paths among them: nothing is extracted, and nothing unlisted is read.
            raise BundleError(f"the bundle holds {unlisted[0][:120]!r}, which its manifest lacks")
        runs = tuple(
            BundledRun(run.id, _run_records(members, manifest, run)) for run in manifest.runs
        )
    _check_whole(manifest, runs)
    return Bundle(manifest, runs)


def member_name(hex_id: str, name: str) -> str:
    """The member holding the run's records of one kind."""
    return f"runs/{hex_id}/{name}.jsonl"


class _Members:
    """The bundle's members, each inflated within `Limits`: a zip bomb is refused by
    what it declares before a byte is inflated."""

    def __init__(self, archive: zipfile.ZipFile, limits: Limits) -> None:
        self._archive = archive
        self._limits = limits
        infos = archive.infolist()
        self.names = frozenset(info.filename for info in infos)
        if len(self.names) != len(infos):
            raise BundleError("the bundle holds a member twice under one name")
        for info in infos:
            self._check_declared(info)
        declared = sum(info.file_size for info in infos)
        if declared > limits.bundle_bytes:
            raise BundleError(
                f"the bundle inflates to {declared} bytes; at most {limits.bundle_bytes} are read"
            )

    def _check_declared(self, info: zipfile.ZipInfo) -> None:
        name, limits = info.filename[:120], self._limits
        if info.flag_bits & 0x1:
            raise BundleError(f"{name!r} is encrypted; a bundle never is")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise BundleError(f"{name!r} is compressed in a way this host does not read")
        if info.file_size > limits.member_bytes:
            raise BundleError(
                f"{name!r} inflates to {info.file_size} bytes; "
                f"a member may hold at most {limits.member_bytes}"
            )
        ratio_held = info.file_size >= limits.ratio_floor
        if ratio_held and info.file_size > limits.ratio * info.compress_size:
            raise BundleError(
                f"{name!r} inflates {info.file_size // max(info.compress_size, 1)}-fold; "
                f"at most {limits.ratio}-fold is read"
            )

    def chunks(self, name: str) -> Iterator[bytes]:
        """The member's bytes as they inflate, never more than it declared."""
        try:
            info = self._archive.getinfo(name)
            with self._archive.open(info) as stream:
                yield from inflated(stream, info.file_size, name)
        except KeyError:
            raise BundleError(f"the bundle lacks {name}") from None
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
            raise BundleError(f"{name} is damaged: {exc}") from None


def inflated(stream: IO[bytes], declared: int, name: str) -> Iterator[bytes]:
    """`stream` read in chunks, refused once it yields more than the `declared` bytes
    the caps were checked against (a zip reader that trusts its data over its
    directory would otherwise inflate without bound)."""
    read = 0
    while chunk := stream.read(_CHUNK):
        read += len(chunk)
        if read > declared:
            raise BundleError(f"{name} inflates past the {declared} bytes it declares")
        yield chunk


def _lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The lines of a stream of chunks, each joined once however many chunks it spans."""
    pending: list[bytes] = []
    for chunk in chunks:
        *whole, rest = chunk.split(b"\n")
        if whole:
            yield b"".join([*pending, whole[0]])
            yield from whole[1:]
            pending = []
        pending.append(rest)
    yield b"".join(pending)


def _json(text: bytes) -> Any:
    """`text` as JSON; `ValueError` also for nesting too deep to read."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deep") from None


def _manifest(members: _Members, path: Path) -> Manifest:
    if MANIFEST not in members.names:
        raise BundleError(f"{path} has no readable {MANIFEST}")
    try:
        document = _json(b"".join(members.chunks(MANIFEST)))
    except ValueError as exc:
        raise BundleError(f"{path} has no readable {MANIFEST}: {exc}") from None
    found = document.get("format") if isinstance(document, dict) else None
    if not isinstance(found, str) or found not in _MEMBERS:
        raise BundleError(
            f"{path} is in format {str(found)[:80]!r}; "
            f"this host reads {' and '.join(map(repr, _MEMBERS))}"
        )
    try:
        manifest = Manifest.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"]))
        raise BundleError(
            f"{MANIFEST} of {path} is not a manifest: {where}: {first['msg']}"
        ) from None
    if not ids.is_tenant_id(manifest.origin.tenant):
        raise BundleError(f"{MANIFEST} names no tenant: {manifest.origin.tenant!r}")
    hex_ids = [run.id for run in manifest.runs]
    if len(set(hex_ids)) != len(hex_ids):
        raise BundleError(f"{MANIFEST} lists a run twice")
    return manifest


def _run_records(
    members: _Members, manifest: Manifest, run: ManifestRun
) -> dict[str, list[dict[str, Any]]]:
    expected = _MEMBERS[manifest.format]
    if unknown := sorted(set(run.files) - set(expected)):
        raise BundleError(f"run {run.id} has members this format has not: {unknown}")
    records: dict[str, list[Any]] = {}
    for name in expected:
        member = member_name(run.id, name)
        if name not in run.files:
            raise BundleError(f"{MANIFEST} lists no {member}")
        records[name] = _rows(members, member, run.files[name])
    if manifest.format == FORMAT_1:
        records = _upgrade_format_1(records)
    elif manifest.format == FORMAT_2:
        records["annotations"] = []
    return records


def _rows(members: _Members, member: str, checksum: str) -> list[Any]:
    """The member's rows, hashed and parsed as it streams: a damaged member is told
    apart from one that is not JSON lines by its checksum, checked first."""
    digest = hashlib.sha256()
    rows: list[Any] = []
    unreadable: ValueError | None = None

    def hashed() -> Iterator[bytes]:
        for chunk in members.chunks(member):
            digest.update(chunk)
            yield chunk

    for line in _lines(hashed()):
        if unreadable is None and line.strip():
            try:
                rows.append(_json(line))
            except ValueError as exc:
                unreadable = exc
    if digest.hexdigest() != checksum:
        raise BundleError(f"{member} does not match its checksum")
    if unreadable is not None:
        raise BundleError(f"{member} is not JSON lines: {unreadable}")
    return rows


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
    """Every row: its table's shape, its run, the records it names, once; every run: its
    one row, of the kind the manifest lists."""
    seen: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {k.name: {} for k in RUN_RECORDS}
    for listed, run in zip(manifest.runs, runs, strict=True):
        run_id = f"{manifest.origin.tenant}/{run.hex_id}"
        for kind in RUN_RECORDS:
            rows = run.records[kind.name]
            for index, row in enumerate(rows):
                where = placed(run.hex_id, kind, index)
                rows[index] = checked = _checked_row(kind, row, where, run, run_id)
                held = seen[kind.name].setdefault(primary_key(kind, checked), checked)
                # A record the tenant keeps once travels, the same, with each run naming it.
                if held is not checked and (kind.named_by is None or held != checked):
                    raise BundleError(f"{where}: the bundle holds this {kind.name} row twice")
        if len(run.records["runs"]) != 1:
            count = len(run.records["runs"])
            raise BundleError(f"runs/{run.hex_id}/runs.jsonl holds {count} run rows, not one")
        row = run.records["runs"][0]
        if row["kind"] != listed.kind:
            raise BundleError(
                f"run {run_id} is a {row['kind']!r} run; {MANIFEST} lists a {listed.kind!r}"
            )


def placed(hex_id: str, kind: RecordKind, index: int) -> str:
    """Where the `index`th row of the run's `kind` records stands, as a refusal names it."""
    return f"{member_name(hex_id, kind.name)} line {index + 1}"


def _checked_row(
    kind: RecordKind, row: Any, where: str, run: BundledRun, run_id: str
) -> dict[str, Any]:
    values = restored(kind, row, where)
    if kind.named_by is None and values[kind.run_column] != run_id:
        raise BundleError(f"{where}: a row of run {values[kind.run_column]!r}, not of {run_id}")
    if (named_by := kind.named_by) is not None:
        try:
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
