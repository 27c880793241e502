"""Bundles of the end-to-end host's runs, made and imported straight on its store."""

from __future__ import annotations

import json
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from wopeval import recordings
from wopeval.store import Store

from ._server import TENANT_A


async def export_runs(url: str, run_ids: list[str], path: Path) -> None:
    store = await Store.open(url)
    try:
        async with store.reading() as uow:
            origin = recordings.Origin(host="test", tenant=TENANT_A)
            await recordings.export_runs(uow.connection, run_ids, origin, datetime.now(UTC), path)
    finally:
        await store.close()


async def import_bundle(url: str, path: Path, tenant: str) -> list[str]:
    store = await Store.open(url)
    try:
        async with store.transaction() as uow:
            read = recordings.read_bundle(path)
            return (await recordings.import_bundle(uow.connection, read, tenant)).run_ids
    finally:
        await store.close()


def bundle_rows(archive: zipfile.ZipFile, run_id: str, kind: str) -> list[dict[str, Any]]:
    text = archive.read(f"runs/{run_id.partition('/')[2]}/{kind}.jsonl").decode("utf-8")
    return [json.loads(line) for line in text.splitlines() if line]
