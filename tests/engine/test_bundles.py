"""Recording bundles checked whole before a row is written, and format 1 still read.

The base bundle is this host's own export (format 2) of the committed format-1
test data (tests/cli/data/README.md), imported into a store first. Each case
changes it the way a damaged or forged bundle would be changed — with its
checksums made to match again, unless the checksum is the point — and the
reader must refuse it, saying what is wrong, before any store is touched.
"""

from __future__ import annotations

import asyncio
import json
import zipfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Table, func, select, update

from _backends import Backend
from wopeval import recordings
from wopeval.store import Store, sqlite_url
from wopeval.store.tables import run_tool_listings, runs, tool_calls, tool_listings

from ._bundles import (
    BASELINE,
    DIGEST,
    FOREIGN,
    FORMAT_1_BUNDLE,
    LISTING,
    ORIGIN,
    REPLAY,
    SOURCE,
    Members,
    both,
    event_doc,
    export_format_2,
    export_from,
    first_row,
    first_run_files,
    import_into,
    manifest_edit,
    offered,
    rebuilt,
    rows_of,
    runs_of,
)


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
    return export_format_2(tmp_path_factory.mktemp("exported"))


def test_this_host_writes_format_2_with_every_record_kind(exported: Path) -> None:
    with zipfile.ZipFile(exported) as archive:
        text = archive.read("manifest.json").decode()
    manifest = json.loads(text)
    # Written for a person to read, too: indented by two.
    assert text.startswith('{\n  "format": "wopeval.recordings/3",\n')
    for run in manifest["runs"]:
        assert list(run["files"]) == [
            "runs", "run_plans", "events", "tool_calls", "invocations", "model_calls",
            "task_trials", "derived_fixtures", "run_tool_listings", "tool_listings",
            "annotations",
        ]  # fmt: skip


def test_a_format_2_bundle_reads_as_one_without_annotations(exported: Path, tmp_path: Path) -> None:
    def as_format_2(members: Members) -> None:
        manifest = json.loads(members["manifest.json"])
        manifest["format"] = "wopeval.recordings/2"
        for run in manifest["runs"]:
            del run["files"]["annotations"]
            del members[f"runs/{run['id']}/annotations.jsonl"]
        members["manifest.json"] = json.dumps(manifest).encode()

    older = recordings.read_bundle(rebuilt(exported, tmp_path / "2.zip", as_format_2, rehash=False))
    newer = recordings.read_bundle(exported)
    assert older.manifest.format == "wopeval.recordings/2"
    assert [run.records for run in older.runs] == [run.records for run in newer.runs]
    assert all(run.records["annotations"] == [] for run in older.runs)


def test_a_format_1_bundle_reads_as_the_same_records_format_2_carries(exported: Path) -> None:
    older, newer = recordings.read_bundle(FORMAT_1_BUNDLE), recordings.read_bundle(exported)
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


CASES: dict[str, tuple[Callable[[Members], object], str]] = {
    "another format": (
        manifest_edit(lambda m: m.update(format="wopeval.recordings/99")),
        "is in format 'wopeval.recordings/99'",
    ),
    "no manifest": (lambda members: members.pop("manifest.json"), "no readable manifest.json"),
    "a run id that is no hex id": (
        manifest_edit(lambda m: m["runs"][0].update(id="../../etc")),
        "is not a manifest",
    ),
    "a run listed twice": (
        manifest_edit(lambda m: m["runs"].append(m["runs"][0])),
        "lists a run twice",
    ),
    "an origin that is no tenant": (
        manifest_edit(lambda m: m["origin"].update(tenant="a/b")),
        "names no tenant",
    ),
    "a member missing": (
        lambda members: members.pop(f"runs/{SOURCE}/model_calls.jsonl"),
        f"lacks runs/{SOURCE}/model_calls.jsonl",
    ),
    "a member left out of the manifest": (
        first_run_files(lambda files: files.pop("model_calls")),
        "lists no runs/",
    ),
    "a member this format has not": (
        first_run_files(lambda files: files.update(secrets="0" * 64)),
        "members this format has not: ['secrets']",
    ),
    "not JSON lines": (
        lambda members: members.update({f"runs/{SOURCE}/events.jsonl": b"{\n"}),
        "is not JSON lines",
    ),
    "a column the store has not": (
        first_row(SOURCE, "tool_calls", lambda row: row.update(secret=1)),
        "tool_calls has no column secret here",
    ),
    "a required column missing": (
        first_row(SOURCE, "tool_calls", lambda row: row.pop("tool")),
        "this tool_calls row lacks tool",
    ),
    "a null where the store has none": (
        first_row(SOURCE, "tool_calls", lambda row: row.update(tool=None)),
        "tool_calls.tool is null",
    ),
    "a text for a number": (
        first_row(SOURCE, "tool_calls", lambda row: row.update(sequence="3")),
        "tool_calls.sequence is not a INTEGER",
    ),
    "a boolean for a number": (
        first_row(SOURCE, "tool_calls", lambda row: row.update(sequence=True)),
        "tool_calls.sequence is not a INTEGER",
    ),
    "a number for a boolean": (
        first_row(SOURCE, "tool_calls", lambda row: row.update(is_delegate=0)),
        "tool_calls.is_delegate is not a BOOLEAN",
    ),
    "a text longer than its column": (
        first_row(SOURCE, "tool_calls", lambda row: row.update(call_id="x" * 65)),
        "tool_calls.call_id is not a VARCHAR(64)",
    ),
    "a time that is no time": (
        first_row(SOURCE, "invocations", lambda row: row.update(started_at="yesterday")),
        "invocations.started_at is not a DATETIME",
    ),
    "a row that is no object": (
        lambda members: members.update({f"runs/{SOURCE}/events.jsonl": b"[1]\n"}),
        "a row is not a JSON object",
    ),
    "a row of another run": (
        first_row(SOURCE, "events", lambda row: row.update(run_id=f"{ORIGIN}/{REPLAY}")),
        f"a row of run '{ORIGIN}/{REPLAY}', not of {ORIGIN}/{SOURCE}",
    ),
    "a row of another tenant's run": (
        first_row(SOURCE, "tool_calls", lambda row: row.update(run_id=FOREIGN)),
        f"a row of run '{FOREIGN}'",
    ),
    "a derived copy naming another tenant's source": (
        first_row(REPLAY, "derived_fixtures", lambda row: row.update(source_run_id=FOREIGN)),
        f"names '{FOREIGN}', not a run of the bundle's tenant 'prod'",
    ),
    "a replay of another tenant's run": (
        first_row(SOURCE, "runs", lambda row: row.update(parent_run_id=FOREIGN)),
        f"names '{FOREIGN}', not a run of the bundle's tenant",
    ),
    "a request naming another tenant's source": (
        first_row(
            REPLAY, "runs", lambda row: row["request"].update(fixtureRuns={"record": FOREIGN})
        ),
        f"names '{FOREIGN}', not a run of the bundle's tenant",
    ),
    "a plan naming another tenant's source": (
        first_row(REPLAY, "run_plans", lambda row: row["plan"].update(fixtureRuns={"x": FOREIGN})),
        f"names '{FOREIGN}', not a run of the bundle's tenant",
    ),
    "an event naming another tenant's run": (
        first_row(SOURCE, "events", event_doc(lambda doc: doc.update(runId=FOREIGN))),
        f"the log of run {ORIGIN}/{SOURCE}: event 0 is not the one its row names",
    ),
    "an event this host cannot read": (
        first_row(SOURCE, "events", event_doc(lambda doc: doc.update(payload=[]))),
        "this events row is not one this host reads",
    ),
    "erased content": (
        first_row(
            SOURCE, "tool_calls", lambda row: row.update(erased_at="2026-01-01T00:00:00+00:00")
        ),
        "erased tool content of run",
    ),
    "a row held twice": (
        lambda members: rows_of(members, SOURCE, "events", lambda rows: rows.append(rows[0])),
        "the bundle holds this events row twice",
    ),
    "a run without its row": (
        lambda members: rows_of(members, SOURCE, "runs", lambda rows: rows.clear()),
        f"runs/{SOURCE}/runs.jsonl holds 0 run rows, not one",
    ),
    "a tool listing its run does not name": (
        offered(SOURCE, named=False),
        "run dae736656df44beb983833e0d21a6ef8 names no such tool_listings row",
    ),
    "a tool listing that is not what its digest names": (
        offered(SOURCE, [{**LISTING[0], "description": "Refund it."}, LISTING[1]]),
        "its digest is not that of its content",
    ),
    "a tool listing of another tenant": (
        offered(SOURCE, tenant="victim"),
        "a row of tenant 'victim', not 'prod'",
    ),
    "one tool listing with two contents": (
        both(offered(SOURCE), offered(REPLAY, LISTING[::-1])),
        "the bundle holds this tool_listings row twice",
    ),
    "a run that has not ended": (
        first_row(SOURCE, "runs", lambda row: row.update(status="running")),
        "has not ended (status 'running')",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_a_forged_or_damaged_bundle_is_refused_saying_why(
    exported: Path, tmp_path: Path, case: str
) -> None:
    change, message = CASES[case]
    forged = rebuilt(exported, tmp_path / "forged.zip", change, rehash=True)
    with pytest.raises(recordings.BundleError) as refused:
        recordings.read_bundle(forged)
    assert message in str(refused.value)


def test_a_member_changed_after_export_fails_its_checksum(exported: Path, tmp_path: Path) -> None:
    change = first_row(SOURCE, "events", event_doc(lambda doc: doc.update(type="run.renamed")))
    tampered = rebuilt(exported, tmp_path / "tampered.zip", change, rehash=False)
    with pytest.raises(recordings.BundleError, match=f"runs/{SOURCE}/events.jsonl does not match"):
        recordings.read_bundle(tampered)


def test_a_file_that_is_no_zip_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "recordings.zip"
    path.write_bytes(b"not a zip")
    with pytest.raises(recordings.BundleError, match="is not a recordings bundle"):
        recordings.read_bundle(path)


# ── the import, in a store ───────────────────────────────────────────────────


def test_an_import_writes_every_run_or_none(
    backend: Backend, tmp_path: Path, exported: Path
) -> None:
    """One of the bundle's runs is already here: the others are not written either."""
    url = backend.new_database() or sqlite_url(tmp_path)
    asyncio.run(import_into(url, runs_of(exported, tmp_path, REPLAY), "ci"))
    whole = recordings.read_bundle(exported)
    with pytest.raises(recordings.BundleError, match=f"run ci/{REPLAY} is already in this store"):
        asyncio.run(import_into(url, whole, "ci"))
    assert asyncio.run(_run_count(url)) == 1
    # Under another tenant the same hex ids are other runs.
    assert len(asyncio.run(import_into(url, whole, "ci2")).run_ids) == 3


def test_an_import_under_a_name_that_is_no_tenant_is_refused(
    tmp_path: Path, exported: Path
) -> None:
    url = sqlite_url(tmp_path)
    with pytest.raises(recordings.BundleError, match="is not a tenant id"):
        asyncio.run(import_into(url, recordings.read_bundle(exported), "a/b"))
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
    every_run = both(offered(SOURCE), offered(REPLAY), offered(BASELINE))
    offering = rebuilt(exported, tmp_path / "offered.zip", every_run, rehash=True)
    asyncio.run(import_into(url, runs_of(offering, tmp_path, SOURCE, REPLAY), "ci"))
    assert asyncio.run(_listings(url)) == ([("ci", DIGEST, LISTING)], 2)
    # The tenant holds it already: another bundle naming it imports, and it stays one.
    asyncio.run(import_into(url, runs_of(offering, tmp_path, BASELINE), "ci"))
    assert asyncio.run(_listings(url)) == ([("ci", DIGEST, LISTING)], 3)


# ── the export, from a store ─────────────────────────────────────────────────


async def _changed(url: str, table: Table, values: dict[str, Any]) -> None:
    """Every row of `table` given these values: a state the format-1 runs were never in."""
    store = await Store.open(url)
    try:
        async with store.transaction() as uow:
            await uow.connection.execute(update(table).values(**values))
    finally:
        await store.close()


@pytest.fixture
def origin_store(backend: Backend, tmp_path: Path, exported: Path) -> str:
    """A store holding the base bundle's runs under their own tenant, the newest written
    first (so that no order but the runs' own gives the oldest first), SOURCE offered the
    `orders` tool listing; and SOURCE under another tenant, offered it too."""
    url = backend.new_database() or sqlite_url(tmp_path)
    newest_first = both(manifest_edit(lambda m: m["runs"].reverse()), offered(SOURCE))
    reordered = rebuilt(exported, tmp_path / "reordered.zip", newest_first, rehash=True)
    asyncio.run(import_into(url, recordings.read_bundle(reordered), ORIGIN))
    asyncio.run(import_into(url, runs_of(reordered, tmp_path, SOURCE), "other"))
    return url


async def _tagged(url: str, tenant: str, tag: str) -> list[str]:
    store = await Store.open(url)
    try:
        async with store.reading() as uow:
            return await recordings.tagged_run_ids(uow.connection, tenant, tag)
    finally:
        await store.close()


def test_tagged_runs_are_the_tenants_ended_runs_with_the_tag_oldest_first(
    origin_store: str,
) -> None:
    assert asyncio.run(_tagged(origin_store, ORIGIN, "prod")) == [
        f"{ORIGIN}/{SOURCE}",
        f"{ORIGIN}/{REPLAY}",
    ]
    assert asyncio.run(_tagged(origin_store, ORIGIN, "main")) == [f"{ORIGIN}/{BASELINE}"]
    assert asyncio.run(_tagged(origin_store, "other", "prod")) == [f"other/{SOURCE}"]
    asyncio.run(_changed(origin_store, runs, {"request": {"mode": "eval"}}))
    assert asyncio.run(_tagged(origin_store, ORIGIN, "prod")) == []
    asyncio.run(_changed(origin_store, runs, {"status": "running", "request": {"tags": ["prod"]}}))
    assert asyncio.run(_tagged(origin_store, ORIGIN, "prod")) == []


def test_an_export_writes_each_run_once_and_a_whole_bundle(
    origin_store: str, tmp_path: Path
) -> None:
    (directory := tmp_path / "out").mkdir()
    path = directory / "out.zip"
    wanted = [f"{ORIGIN}/{SOURCE}", f"{ORIGIN}/{REPLAY}", f"{ORIGIN}/{SOURCE}"]
    asyncio.run(_changed(origin_store, tool_calls, {"result": {"reply": "déjà vu"}}))
    done = asyncio.run(export_from(origin_store, wanted, path))
    assert done == recordings.Exported(path, wanted[:2])
    # Written aside and renamed: nothing but the bundle is left.
    assert [p.name for p in directory.iterdir()] == ["out.zip"]
    read = recordings.read_bundle(path)
    assert [run.hex_id for run in read.runs] == [SOURCE, REPLAY]
    assert read.manifest.origin == recordings.Origin(host="test", tenant=ORIGIN)
    with zipfile.ZipFile(path) as archive:
        assert {info.compress_type for info in archive.infolist()} == {zipfile.ZIP_DEFLATED}
        # Text as it was recorded, in UTF-8, not escaped.
        assert '"déjà vu"'.encode() in archive.read(f"runs/{SOURCE}/tool_calls.jsonl")
    # The tool listings travel with the run they were offered to, and only the tenant's own.
    (source, replay) = read.runs
    assert source.records["run_tool_listings"] == [
        {"run_id": f"{ORIGIN}/{SOURCE}", "server": "orders", "digest": DIGEST}
    ]
    assert source.records["tool_listings"] == [
        {"tenant": ORIGIN, "digest": DIGEST, "listing": LISTING}
    ]
    assert replay.records["run_tool_listings"] == replay.records["tool_listings"] == []


@pytest.mark.parametrize(
    ("run_id", "changed", "message"),
    [
        (f"other/{SOURCE}", None, f"other/{SOURCE} is not a run of tenant 'prod'"),
        (f"{ORIGIN}/{'0' * 32}", None, f"no run {ORIGIN}/{'0' * 32} in this store"),
        (f"{ORIGIN}/{SOURCE}", (runs, {"status": "paused"}), "is still active; export it once"),
        (
            f"{ORIGIN}/{SOURCE}",
            (tool_calls, {"erased_at": datetime(2026, 1, 1, tzinfo=UTC)}),
            f"the tool content of {ORIGIN}/{SOURCE} was erased; an erased run is never exported",
        ),
    ],
    ids=["another tenant's run", "no such run", "an active run", "an erased run"],
)
def test_an_export_refuses_what_may_not_travel(
    origin_store: str,
    tmp_path: Path,
    run_id: str,
    changed: tuple[Table, dict[str, Any]] | None,
    message: str,
) -> None:
    if changed is not None:
        asyncio.run(_changed(origin_store, *changed))
    path = tmp_path / "out.zip"
    with pytest.raises(recordings.BundleError) as refused:
        asyncio.run(export_from(origin_store, [run_id], path))
    assert message in str(refused.value)
    assert not path.exists()
