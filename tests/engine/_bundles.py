"""Recording bundles for the bundle tests: the base bundle and the edits that forge one.

The base bundle is this host's own export (format 2) of the committed format-1
test data (tests/cli/data/README.md), imported into a store first. An edit
changes its members the way a damaged or forged bundle would be changed;
`rebuilt` makes the checksums match again, unless the checksum is the point.
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

from wopeval import evals, recordings
from wopeval.store import Store, sqlite_url

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


async def import_into(url: str, bundle: recordings.Bundle, tenant: str) -> recordings.Imported:
    store = await Store.open(url)
    try:
        async with store.transaction() as uow:
            return await recordings.import_bundle(uow.connection, bundle, tenant)
    finally:
        await store.close()


async def export_from(url: str, run_ids: list[str], path: Path) -> recordings.Exported:
    store = await Store.open(url)
    try:
        async with store.reading() as uow:
            origin = recordings.Origin(host="test", tenant=ORIGIN)
            return await recordings.export_runs(
                uow.connection, run_ids, origin, datetime.now(UTC), path
            )
    finally:
        await store.close()


def rows_of(members: Members, hex_id: str, kind: str, change: Callable[[list[Any]], None]) -> None:
    member = f"runs/{hex_id}/{kind}.jsonl"
    rows = [json.loads(line) for line in members[member].splitlines() if line]
    change(rows)
    members[member] = b"".join(json.dumps(row).encode() + b"\n" for row in rows)


def first_row(
    hex_id: str, kind: str, change: Callable[[dict[str, Any]], None]
) -> Callable[[Members], object]:
    """A change to the first row of one member."""
    return lambda members: rows_of(members, hex_id, kind, lambda rows: change(rows[0]))


def manifest_edit(change: Callable[[dict[str, Any]], object]) -> Callable[[Members], object]:
    def edit(members: Members) -> None:
        manifest = json.loads(members["manifest.json"])
        change(manifest)
        members["manifest.json"] = json.dumps(manifest).encode()

    return edit


def event_doc(change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def edit(row: dict[str, Any]) -> None:
        doc = json.loads(row["doc"])
        change(doc)
        row["doc"] = json.dumps(doc)

    return edit


def first_run_files(change: Callable[[dict[str, str]], object]) -> Callable[[Members], object]:
    return manifest_edit(lambda manifest: change(manifest["runs"][0]["files"]))


def offered(
    hex_id: str, listing: list[Any] = LISTING, tenant: str = ORIGIN, *, named: bool = True
) -> Callable[[Members], object]:
    """The run was offered the MCP server `orders` listing `LISTING` (named by `DIGEST`)."""

    def edit(members: Members) -> None:
        if named:
            row = {"run_id": f"{ORIGIN}/{hex_id}", "server": "orders", "digest": DIGEST}
            rows_of(members, hex_id, "run_tool_listings", lambda rows: rows.append(row))
        kept = {"tenant": tenant, "digest": DIGEST, "listing": listing}
        rows_of(members, hex_id, "tool_listings", lambda rows: rows.append(kept))

    return edit


def both(*changes: Callable[[Members], object]) -> Callable[[Members], object]:
    return lambda members: [change(members) for change in changes]


def rebuilt(
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


def only_runs(*hex_ids: str) -> Callable[[Members], object]:
    """The bundle with only these runs."""

    def keep(members: Members) -> None:
        manifest_edit(lambda m: m.update(runs=[r for r in m["runs"] if r["id"] in hex_ids]))(
            members
        )
        for name in [name for name in members if name.startswith("runs/")]:
            if name.split("/")[1] not in hex_ids:
                del members[name]

    return keep


def runs_of(path: Path, directory: Path, *hex_ids: str) -> recordings.Bundle:
    """The bundle at `path` with only these runs, read."""
    kept = rebuilt(path, directory / "-".join(hex_ids), only_runs(*hex_ids), rehash=False)
    return recordings.read_bundle(kept)


def export_format_2(directory: Path) -> Path:
    """The format-1 data imported under its own tenant and exported again, in format 2."""
    url = sqlite_url(directory)
    asyncio.run(import_into(url, recordings.read_bundle(FORMAT_1_BUNDLE), ORIGIN))
    path = directory / "format-2.zip"
    asyncio.run(
        export_from(url, [f"{ORIGIN}/{hex_id}" for hex_id in (SOURCE, REPLAY, BASELINE)], path)
    )
    return path
