"""Recording bundles checked whole before a row is written, and format 1 still read.

The base bundle is this host's own export (format 2) of the committed format-1
test data (tests/cli/data/README.md), imported into a store first. Each case
changes it the way a damaged or forged bundle would be changed — with its
checksums made to match again, unless the checksum is the point — and the
reader must refuse it, saying what is wrong, before any store is touched.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import zipfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from _backends import Backend
from wopeval import evals
from wopeval.store import Store, sqlite_url
from wopeval.store import bundle as bundles
from wopeval.store.tables import run_tool_listings, runs, tool_listings

FORMAT_1_BUNDLE = Path(__file__).parents[1] / "cli" / "data" / "recordings-format-1.zip"
ORIGIN = "prod"
SOURCE = "dae736656df44beb983833e0d21a6ef8"
REPLAY = "c4065447fc444e1d8885aab993207d48"
BASELINE = "51d4548c90f84388b9083bac6b4e9791"
FOREIGN = f"victim/{SOURCE}"
LISTING: list[Any] = [
    {"name": "lookup", "description": "Look an order up.", "inputSchema": {"type": "object"}},
    {"name": "refund", "description": "Refund an order.", "inputSchema": {"type": "object"}},
]
DIGEST = evals.ServerListing.from_document("orders", LISTING).digest

Members = dict[str, bytes]


async def _import(url: str, bundle: bundles.Bundle, tenant: str) -> bundles.Imported:
    store = await Store.open(url)
    try:
        async with store.transaction() as uow:
            return await bundles.import_bundle(uow.connection, bundle, tenant)
    finally:
        await store.close()


async def _export(url: str, run_ids: list[str], path: Path) -> None:
    store = await Store.open(url)
    try:
        async with store.reading() as uow:
            origin = bundles.Origin(host="test", tenant=ORIGIN)
            await bundles.export_runs(uow.connection, run_ids, origin, datetime.now(UTC), path)
    finally:
        await store.close()


async def _run_count(url: str) -> int:
    store = await Store.open(url)
    try:
        async with store.reading() as uow:
            return int(
                (await uow.connection.execute(select(func.count()).select_from(runs))).scalar_one()
            )
    finally:
        await store.close()


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The format-1 data imported under its own tenant and exported again, in format 2."""
    directory = tmp_path_factory.mktemp("exported")
    url = sqlite_url(directory)
    asyncio.run(_import(url, bundles.read_bundle(FORMAT_1_BUNDLE), ORIGIN))
    path = directory / "format-2.zip"
    asyncio.run(_export(url, [f"{ORIGIN}/{hex_id}" for hex_id in (SOURCE, REPLAY, BASELINE)], path))
    return path


def test_this_host_writes_format_2_with_every_record_kind(exported: Path) -> None:
    with zipfile.ZipFile(exported) as archive:
        manifest = json.loads(archive.read("manifest.json"))
    assert manifest["format"] == "wopeval.recordings/2"
    for run in manifest["runs"]:
        assert list(run["files"]) == [
            "runs", "run_plans", "events", "tool_calls", "invocations", "model_calls",
            "task_trials", "derived_fixtures", "run_tool_listings", "tool_listings",
        ]  # fmt: skip


def test_a_format_1_bundle_reads_as_the_same_records_format_2_carries(exported: Path) -> None:
    older, newer = bundles.read_bundle(FORMAT_1_BUNDLE), bundles.read_bundle(exported)
    assert older.manifest.format == "wopeval.recordings/1"
    assert [run.hex_id for run in older.runs] == [run.hex_id for run in newer.runs]
    for old, new in zip(older.runs, newer.runs, strict=True):
        assert _with_later_columns(old.records, new.records) == new.records
    (replay,) = (run for run in older.runs if run.hex_id == REPLAY)
    assert replay.records["run_plans"][0]["plan"]["fixtureRuns"] == {"record": f"{ORIGIN}/{SOURCE}"}
    assert all(run.records["model_calls"] == [] for run in older.runs)


def _with_later_columns(
    older: dict[str, list[Any]], newer: dict[str, list[Any]]
) -> dict[str, list[Any]]:
    """`older`'s rows with the columns later migrations added (and format 1 could not
    carry) as the store fills them on import: empty."""
    return {
        kind: [
            {**{column: None for column in new_row if column not in old_row}, **old_row}
            for old_row, new_row in zip(rows, newer[kind], strict=True)
        ]
        for kind, rows in older.items()
    }


# ── forged and damaged bundles ───────────────────────────────────────────────


def _rows(members: Members, hex_id: str, kind: str, change: Callable[[list[Any]], None]) -> None:
    member = f"runs/{hex_id}/{kind}.jsonl"
    rows = [json.loads(line) for line in members[member].splitlines() if line]
    change(rows)
    members[member] = b"".join(json.dumps(row).encode() + b"\n" for row in rows)


def _row(
    hex_id: str, kind: str, change: Callable[[dict[str, Any]], None]
) -> Callable[[Members], object]:
    """A change to the first row of one member."""
    return lambda members: _rows(members, hex_id, kind, lambda rows: change(rows[0]))


def _manifest(change: Callable[[dict[str, Any]], object]) -> Callable[[Members], object]:
    def edit(members: Members) -> None:
        manifest = json.loads(members["manifest.json"])
        change(manifest)
        members["manifest.json"] = json.dumps(manifest).encode()

    return edit


def _event_doc(change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def edit(row: dict[str, Any]) -> None:
        doc = json.loads(row["doc"])
        change(doc)
        row["doc"] = json.dumps(doc)

    return edit


def _first_run_files(change: Callable[[dict[str, str]], object]) -> Callable[[Members], object]:
    return _manifest(lambda manifest: change(manifest["runs"][0]["files"]))


def _offered(
    hex_id: str, listing: list[Any] = LISTING, tenant: str = ORIGIN, *, named: bool = True
) -> Callable[[Members], object]:
    """The run was offered the MCP server `orders` listing `LISTING` (named by `DIGEST`)."""

    def edit(members: Members) -> None:
        if named:
            row = {"run_id": f"{ORIGIN}/{hex_id}", "server": "orders", "digest": DIGEST}
            _rows(members, hex_id, "run_tool_listings", lambda rows: rows.append(row))
        kept = {"tenant": tenant, "digest": DIGEST, "listing": listing}
        _rows(members, hex_id, "tool_listings", lambda rows: rows.append(kept))

    return edit


def _both(*changes: Callable[[Members], object]) -> Callable[[Members], object]:
    return lambda members: [change(members) for change in changes]


CASES: dict[str, tuple[Callable[[Members], object], str]] = {
    "another format": (
        _manifest(lambda m: m.update(format="wopeval.recordings/99")),
        "is in format 'wopeval.recordings/99'",
    ),
    "no manifest": (lambda members: members.pop("manifest.json"), "no readable manifest.json"),
    "a run id that is no hex id": (
        _manifest(lambda m: m["runs"][0].update(id="../../etc")),
        "is not a manifest",
    ),
    "a run listed twice": (
        _manifest(lambda m: m["runs"].append(m["runs"][0])),
        "lists a run twice",
    ),
    "an origin that is no tenant": (
        _manifest(lambda m: m["origin"].update(tenant="a/b")),
        "names no tenant",
    ),
    "a member missing": (
        lambda members: members.pop(f"runs/{SOURCE}/model_calls.jsonl"),
        f"lacks runs/{SOURCE}/model_calls.jsonl",
    ),
    "a member left out of the manifest": (
        _first_run_files(lambda files: files.pop("model_calls")),
        "lists no runs/",
    ),
    "a member this format has not": (
        _first_run_files(lambda files: files.update(secrets="0" * 64)),
        "members this format has not: ['secrets']",
    ),
    "not JSON lines": (
        lambda members: members.update({f"runs/{SOURCE}/events.jsonl": b"{\n"}),
        "is not JSON lines",
    ),
    "a column the store has not": (
        _row(SOURCE, "tool_calls", lambda row: row.update(secret=1)),
        "tool_calls has no column secret here",
    ),
    "a required column missing": (
        _row(SOURCE, "tool_calls", lambda row: row.pop("tool")),
        "this tool_calls row lacks tool",
    ),
    "a null where the store has none": (
        _row(SOURCE, "tool_calls", lambda row: row.update(tool=None)),
        "tool_calls.tool is null",
    ),
    "a text for a number": (
        _row(SOURCE, "tool_calls", lambda row: row.update(sequence="3")),
        "tool_calls.sequence is not a INTEGER",
    ),
    "a boolean for a number": (
        _row(SOURCE, "tool_calls", lambda row: row.update(sequence=True)),
        "tool_calls.sequence is not a INTEGER",
    ),
    "a number for a boolean": (
        _row(SOURCE, "tool_calls", lambda row: row.update(is_delegate=0)),
        "tool_calls.is_delegate is not a BOOLEAN",
    ),
    "a text longer than its column": (
        _row(SOURCE, "tool_calls", lambda row: row.update(call_id="x" * 65)),
        "tool_calls.call_id is not a VARCHAR(64)",
    ),
    "a time that is no time": (
        _row(SOURCE, "invocations", lambda row: row.update(started_at="yesterday")),
        "invocations.started_at is not a DATETIME",
    ),
    "a row that is no object": (
        lambda members: members.update({f"runs/{SOURCE}/events.jsonl": b"[1]\n"}),
        "a row is not a JSON object",
    ),
    "a row of another run": (
        _row(SOURCE, "events", lambda row: row.update(run_id=f"{ORIGIN}/{REPLAY}")),
        f"a row of run '{ORIGIN}/{REPLAY}', not of {ORIGIN}/{SOURCE}",
    ),
    "a row of another tenant's run": (
        _row(SOURCE, "tool_calls", lambda row: row.update(run_id=FOREIGN)),
        f"a row of run '{FOREIGN}'",
    ),
    "a derived copy naming another tenant's source": (
        _row(REPLAY, "derived_fixtures", lambda row: row.update(source_run_id=FOREIGN)),
        f"names '{FOREIGN}', not a run of the bundle's tenant 'prod'",
    ),
    "a replay of another tenant's run": (
        _row(SOURCE, "runs", lambda row: row.update(parent_run_id=FOREIGN)),
        f"names '{FOREIGN}', not a run of the bundle's tenant",
    ),
    "a request naming another tenant's source": (
        _row(REPLAY, "runs", lambda row: row["request"].update(fixtureRuns={"record": FOREIGN})),
        f"names '{FOREIGN}', not a run of the bundle's tenant",
    ),
    "a plan naming another tenant's source": (
        _row(REPLAY, "run_plans", lambda row: row["plan"].update(fixtureRuns={"x": FOREIGN})),
        f"names '{FOREIGN}', not a run of the bundle's tenant",
    ),
    "an event naming another tenant's run": (
        _row(SOURCE, "events", _event_doc(lambda doc: doc.update(runId=FOREIGN))),
        f"the log of run {ORIGIN}/{SOURCE}: event 0 is not the one its row names",
    ),
    "an event this host cannot read": (
        _row(SOURCE, "events", _event_doc(lambda doc: doc.update(payload=[]))),
        "this events row is not one this host reads",
    ),
    "erased content": (
        _row(SOURCE, "tool_calls", lambda row: row.update(erased_at="2026-01-01T00:00:00+00:00")),
        "erased tool content of run",
    ),
    "a row held twice": (
        lambda members: _rows(members, SOURCE, "events", lambda rows: rows.append(rows[0])),
        "the bundle holds this events row twice",
    ),
    "a run without its row": (
        lambda members: _rows(members, SOURCE, "runs", lambda rows: rows.clear()),
        f"runs/{SOURCE}/runs.jsonl holds 0 run rows, not one",
    ),
    "a tool listing its run does not name": (
        _offered(SOURCE, named=False),
        "run dae736656df44beb983833e0d21a6ef8 names no such tool_listings row",
    ),
    "a tool listing that is not what its digest names": (
        _offered(SOURCE, [{**LISTING[0], "description": "Refund it."}, LISTING[1]]),
        "its digest is not that of its content",
    ),
    "a tool listing of another tenant": (
        _offered(SOURCE, tenant="victim"),
        "a row of tenant 'victim', not 'prod'",
    ),
    "one tool listing with two contents": (
        _both(_offered(SOURCE), _offered(REPLAY, LISTING[::-1])),
        "the bundle holds this tool_listings row twice",
    ),
    "a run that has not ended": (
        _row(SOURCE, "runs", lambda row: row.update(status="running")),
        "has not ended (status 'running')",
    ),
}


def _rebuilt(
    source: Path, target: Path, change: Callable[[Members], object], *, rehash: bool
) -> Path:
    with zipfile.ZipFile(source) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    change(members)
    if rehash and "manifest.json" in members:
        manifest = json.loads(members["manifest.json"])
        for run in manifest["runs"]:
            for name in run["files"]:
                content = members.get(f"runs/{run['id']}/{name}.jsonl")
                if content is not None:
                    run["files"][name] = hashlib.sha256(content).hexdigest()
        members["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(target, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return target


def _runs_of(path: Path, directory: Path, *hex_ids: str) -> bundles.Bundle:
    """The bundle at `path` with only these runs."""

    def keep(members: Members) -> None:
        _manifest(lambda m: m.update(runs=[r for r in m["runs"] if r["id"] in hex_ids]))(members)
        for name in [name for name in members if name.startswith("runs/")]:
            if name.split("/")[1] not in hex_ids:
                del members[name]

    return bundles.read_bundle(_rebuilt(path, directory / "-".join(hex_ids), keep, rehash=False))


@pytest.mark.parametrize("case", CASES)
def test_a_forged_or_damaged_bundle_is_refused_saying_why(
    exported: Path, tmp_path: Path, case: str
) -> None:
    change, message = CASES[case]
    forged = _rebuilt(exported, tmp_path / "forged.zip", change, rehash=True)
    with pytest.raises(bundles.BundleError) as refused:
        bundles.read_bundle(forged)
    assert message in str(refused.value)


def test_a_member_changed_after_export_fails_its_checksum(exported: Path, tmp_path: Path) -> None:
    change = _row(SOURCE, "events", _event_doc(lambda doc: doc.update(type="run.renamed")))
    tampered = _rebuilt(exported, tmp_path / "tampered.zip", change, rehash=False)
    with pytest.raises(bundles.BundleError, match=f"runs/{SOURCE}/events.jsonl does not match"):
        bundles.read_bundle(tampered)


def test_a_file_that_is_no_zip_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "recordings.zip"
    path.write_bytes(b"not a zip")
    with pytest.raises(bundles.BundleError, match="is not a recordings bundle"):
        bundles.read_bundle(path)


# ── the import, in a store ───────────────────────────────────────────────────


def test_an_import_writes_every_run_or_none(
    backend: Backend, tmp_path: Path, exported: Path
) -> None:
    """One of the bundle's runs is already here: the others are not written either."""
    url = backend.new_database() or sqlite_url(tmp_path)
    asyncio.run(_import(url, _runs_of(exported, tmp_path, REPLAY), "ci"))
    whole = bundles.read_bundle(exported)
    with pytest.raises(bundles.BundleError, match=f"run ci/{REPLAY} is already in this store"):
        asyncio.run(_import(url, whole, "ci"))
    assert asyncio.run(_run_count(url)) == 1
    # Under another tenant the same hex ids are other runs.
    assert len(asyncio.run(_import(url, whole, "ci2")).run_ids) == 3


def test_an_import_under_a_name_that_is_no_tenant_is_refused(
    tmp_path: Path, exported: Path
) -> None:
    url = sqlite_url(tmp_path)
    with pytest.raises(bundles.BundleError, match="is not a tenant id"):
        asyncio.run(_import(url, bundles.read_bundle(exported), "a/b"))
    assert asyncio.run(_run_count(url)) == 0


async def _listings(url: str) -> tuple[list[Any], int]:
    store = await Store.open(url)
    try:
        async with store.reading() as uow:
            kept = await uow.connection.execute(select(tool_listings))
            offered = await uow.connection.execute(
                select(func.count()).select_from(run_tool_listings)
            )
            return [tuple(row) for row in kept], int(offered.scalar_one())
    finally:
        await store.close()


def test_a_tool_listing_travels_with_each_run_naming_it_and_is_kept_once(
    backend: Backend, tmp_path: Path, exported: Path
) -> None:
    url = backend.new_database() or sqlite_url(tmp_path)
    every_run = _both(_offered(SOURCE), _offered(REPLAY), _offered(BASELINE))
    offered = _rebuilt(exported, tmp_path / "offered.zip", every_run, rehash=True)
    asyncio.run(_import(url, _runs_of(offered, tmp_path, SOURCE, REPLAY), "ci"))
    assert asyncio.run(_listings(url)) == ([("ci", DIGEST, LISTING)], 2)
    # The tenant holds it already: another bundle naming it imports, and it stays one.
    asyncio.run(_import(url, _runs_of(offered, tmp_path, BASELINE), "ci"))
    assert asyncio.run(_listings(url)) == ([("ci", DIGEST, LISTING)], 3)
