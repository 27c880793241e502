"""Recording bundles: runs carried from one store to another (operator tooling, never a wire route).

A bundle is one zip file: `manifest.json` (format, origin, export time, the runs
and a SHA-256 of every other member) and, per run, one JSON-lines member per
table that holds the run's rows — the run row itself (its snapshot, request,
plan and summary), its event log, its as-executed tool record, its invocations,
its trial details and, for eval runs, the derived fixture copies it was served.

Import writes the runs under the importing tenant, keeping their hex ids, so a
`{taskId: runId}` fixture-runs map stays valid once its tenant part is swapped;
the imported runs are RFC 0252 sources and RFC 0251 baselines there like any
other, and erasable like any other. A bundle is outside the origin's erasure
(docs/recordings.md), so export refuses a run whose tool content was erased,
and import refuses a bundle that holds erased content, fails its checksums or
has a format this host does not read.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import DateTime, Table, select
from sqlalchemy.ext.asyncio import AsyncConnection

from wopeval.store.tables import (
    derived_fixtures,
    events,
    invocations,
    run_plans,
    runs,
    task_trials,
    tool_calls,
)

FORMAT = "wopeval.recordings/1"
"""The bundle format this host writes and reads."""

MANIFEST = "manifest.json"

# Each table that holds a run's rows, and the column naming the run. `erased_at`
# marks content that an erasure removed; such rows never leave or enter a store.
_TABLES: tuple[tuple[Table, str], ...] = (
    (runs, "run_id"),
    (events, "run_id"),
    (tool_calls, "run_id"),
    (invocations, "run_id"),
    (task_trials, "run_id"),
    (derived_fixtures, "eval_run_id"),
)


class BundleError(Exception):
    """The bundle cannot be written or read as asked; the message says why."""


@dataclass(frozen=True)
class Origin:
    host: str
    """Where the runs were recorded (a host name; never a database credential)."""
    tenant: str
    """The tenant the runs belonged to there."""


@dataclass(frozen=True)
class Exported:
    path: Path
    run_ids: list[str]


@dataclass(frozen=True)
class Imported:
    run_ids: list[str]
    origin: dict[str, Any]


async def export_runs(
    connection: AsyncConnection,
    run_ids: Iterable[str],
    origin: Origin,
    at: datetime,
    path: Path,
) -> Exported:
    """Write the runs (all of `origin.tenant`) to a new bundle at `path`."""
    members: dict[str, bytes] = {}
    listed: list[dict[str, Any]] = []
    wanted = list(dict.fromkeys(run_ids))
    for run_id in wanted:
        tenant, _, hex_id = run_id.partition("/")
        if tenant != origin.tenant:
            raise BundleError(f"{run_id} is not a run of tenant {origin.tenant!r}")
        tables = await _read_run(connection, run_id)
        if not tables["runs"]:
            raise BundleError(f"no run {run_id} in this store")
        if tables["runs"][0]["status"] not in ("completed", "failed", "cancelled"):
            raise BundleError(f"{run_id} is still active; export it once it has ended")
        if any(row.get("erased_at") is not None for rows in tables.values() for row in rows):
            raise BundleError(
                f"the tool content of {run_id} was erased; an erased run is never exported"
            )
        files = {}
        for name, rows in tables.items():
            member = f"runs/{hex_id}/{name}.jsonl"
            members[member] = _jsonl(rows)
            files[name] = hashlib.sha256(members[member]).hexdigest()
        listed.append({"id": hex_id, "kind": tables["runs"][0]["kind"], "files": files})
    manifest = {
        "format": FORMAT,
        "origin": {"host": origin.host, "tenant": origin.tenant},
        "exportedAt": at.isoformat(),
        "runs": listed,
    }
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr(MANIFEST, json.dumps(manifest, indent=2))
        for member, content in members.items():
            bundle.writestr(member, content)
    return Exported(path, wanted)


def read_bundle(path: Path) -> tuple[dict[str, Any], dict[str, dict[str, list[dict[str, Any]]]]]:
    """The manifest and every run's rows, checked against the manifest's checksums."""
    try:
        bundle = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise BundleError(f"{path} is not a recordings bundle: {exc}") from exc
    with bundle:
        try:
            manifest = json.loads(bundle.read(MANIFEST))
        except (KeyError, ValueError) as exc:
            raise BundleError(f"{path} has no readable {MANIFEST}") from exc
        if manifest.get("format") != FORMAT:
            raise BundleError(
                f"{path} is in format {manifest.get('format')!r}; this host reads {FORMAT!r}"
            )
        contents: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for run in manifest["runs"]:
            tables = {}
            for name, digest in run["files"].items():
                member = f"runs/{run['id']}/{name}.jsonl"
                try:
                    content = bundle.read(member)
                except KeyError as exc:
                    raise BundleError(f"{path} lacks {member}") from exc
                if hashlib.sha256(content).hexdigest() != digest:
                    raise BundleError(f"{member} in {path} does not match its checksum")
                tables[name] = [json.loads(line) for line in content.splitlines() if line]
            contents[run["id"]] = tables
    return manifest, contents


async def import_runs(connection: AsyncConnection, path: Path, tenant: str) -> Imported:
    """Insert the bundle's runs under `tenant`, in the caller's transaction: all or nothing."""
    manifest, contents = read_bundle(path)
    origin_tenant = str(manifest["origin"]["tenant"])
    rename = _retenant(origin_tenant, tenant)
    imported = []
    for hex_id, tables in contents.items():
        run_id = f"{tenant}/{hex_id}"
        if any(row.get("erased_at") is not None for rows in tables.values() for row in rows):
            raise BundleError(f"the bundle holds erased tool content of run {hex_id}")
        existing = await connection.execute(select(runs.c.run_id).where(runs.c.run_id == run_id))
        if existing.first() is not None:
            raise BundleError(f"run {run_id} is already in this store; nothing was imported")
        for table, _ in _TABLES:
            rows = [_rewrite(table.name, row, rename, tenant) for row in tables.get(table.name, [])]
            # The store keeps a run's plan apart from its row (run_plans).
            plans = [
                {"run_id": row["run_id"], "plan": plan}
                for row in (rows if table is runs else [])
                if (plan := row.pop("plan", None)) is not None
            ]
            if rows:
                await connection.execute(table.insert(), [_restore(table, row) for row in rows])
            if plans:
                await connection.execute(run_plans.insert(), plans)
        imported.append(run_id)
    return Imported(imported, dict(manifest["origin"]))


async def _read_run(connection: AsyncConnection, run_id: str) -> dict[str, list[dict[str, Any]]]:
    tables = {}
    for table, key in _TABLES:
        order = [table.c.sequence] if "sequence" in table.c else []
        result = await connection.execute(
            select(table).where(table.c[key] == run_id).order_by(*order)
        )
        tables[table.name] = [dict(row) for row in result.mappings()]
    # The format's run rows carry their plan, though the store keeps it apart.
    result = await connection.execute(select(run_plans.c.plan).where(run_plans.c.run_id == run_id))
    plan = result.scalar_one_or_none()
    for row in tables["runs"]:
        row["plan"] = plan
    return tables


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return b"".join(
        json.dumps(row, default=_encode, ensure_ascii=False, sort_keys=True).encode() + b"\n"
        for row in rows
    )


def _encode(value: object) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


def _restore(table: Table, row: dict[str, Any]) -> dict[str, Any]:
    """Column values as the table takes them (datetimes back from their ISO text)."""
    return {
        name: datetime.fromisoformat(value)
        if isinstance(table.c[name].type, DateTime) and isinstance(value, str)
        else value
        for name, value in row.items()
    }


def _retenant(origin: str, tenant: str) -> Callable[[Any], Any]:
    """Renames every run id of `origin` to the same hex id under `tenant`, wherever it is."""
    prefix = f"{origin}/"

    def rename(value: Any) -> Any:
        if isinstance(value, str) and value.startswith(prefix):
            return f"{tenant}/{value[len(prefix) :]}"
        return value

    return rename


def _rewrite(
    table: str, row: dict[str, Any], rename: Callable[[Any], Any], tenant: str
) -> dict[str, Any]:
    """The row under `tenant`: only fields that name a run are renamed, never recorded content
    (an agent's input or a tool's result may well hold a string that looks like a run id)."""
    row = dict(row)
    for column in ("run_id", "eval_run_id", "source_run_id", "parent_run_id"):
        if column in row:
            row[column] = rename(row[column])
    if table == "runs":
        row["tenant"] = tenant
        row["owner"] = _owned_by(row["owner"], tenant)
        row["request"] = _eval_refs(row["request"], rename)
        if "tenantId" in row["request"]:
            row["request"]["tenantId"] = tenant
        row["plan"] = _eval_refs(row["plan"], rename)
        row["summary"] = _summary_refs(row["summary"], rename)
        if isinstance(row["outputs"], dict) and "evalSummary" in row["outputs"]:
            outputs = dict(row["outputs"])
            outputs["evalSummary"] = _summary_refs(outputs["evalSummary"], rename)
            row["outputs"] = outputs
    if table == "events":
        doc = json.loads(row["doc"])
        doc["runId"] = rename(doc["runId"])
        payload = doc["payload"]
        if doc["type"] == "run.started":
            payload["owner"] = _owned_by(payload["owner"], tenant)
            if "sourceRunId" in payload:
                payload["sourceRunId"] = rename(payload["sourceRunId"])
        elif doc["type"] == "eval.started":
            doc["payload"] = _eval_refs(payload, rename)
        elif doc["type"] == "run.completed" and "evalSummary" in payload.get("outputs", {}):
            summary = payload["outputs"]["evalSummary"]
            payload["outputs"]["evalSummary"] = _summary_refs(summary, rename)
        row["doc"] = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
    return row


def _eval_refs(document: Any, rename: Callable[[Any], Any]) -> Any:
    """`baselineRunId` and `fixtureRuns` of a create request, a stored plan or `eval.started`."""
    if not isinstance(document, dict):
        return document
    moved = dict(document)
    if "baselineRunId" in moved:
        moved["baselineRunId"] = rename(moved["baselineRunId"])
    if isinstance(moved.get("fixtureRuns"), dict):
        moved["fixtureRuns"] = {task: rename(run) for task, run in moved["fixtureRuns"].items()}
    return moved


def _summary_refs(summary: Any, rename: Callable[[Any], Any]) -> Any:
    """An EvalSummary's one run id: `regression.baselineRunId`."""
    if not isinstance(summary, dict) or not isinstance(summary.get("regression"), dict):
        return summary
    regression = dict(summary["regression"])
    regression["baselineRunId"] = rename(regression.get("baselineRunId"))
    return {**summary, "regression": regression}


def _owned_by(owner: Any, tenant: str) -> Any:
    """The owner block moved to `tenant` (identity.md: a run's tenant is its owner's)."""
    if not isinstance(owner, dict):
        return owner
    moved = {**owner, "tenant": tenant}
    if isinstance(owner.get("subject"), dict):
        moved["subject"] = {**owner["subject"], "tenant": tenant}
    return moved


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
        if tag in (row.request or {}).get("tags", [])
        and row.status in ("completed", "failed", "cancelled")
    ]
