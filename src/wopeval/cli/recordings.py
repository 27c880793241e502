"""`wopeval recordings export|import`: carry recorded runs between stores (docs/recordings.md).

Operator tooling over the store itself (`--data-dir` / `--database-url`), never a
wire route: RFC 0252 puts no bulk export of recorded content on the wire.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from wopeval import client
from wopeval.cli._exit import DATABASE_OWNED, Group
from wopeval.cli.serve import build_settings
from wopeval.settings import Settings

if TYPE_CHECKING:
    from wopeval.recordings import Bundle

app = typer.Typer(
    cls=Group,
    name="recordings",
    help="Export recorded runs from a store to a bundle, or import a bundle into another.",
    no_args_is_help=True,
    add_completion=False,
)

DataDir = Annotated[Path, typer.Option(envvar="WOPEVAL_DATA_DIR", help="The store's data dir.")]
DatabaseUrl = Annotated[
    str | None, typer.Option(envvar="WOPEVAL_DATABASE_URL", help="postgresql+psycopg://…")
]
Tenant = Annotated[str, typer.Option("--tenant", help="The tenant whose runs these are.")]


@app.command("export")
def export(
    run_ids: Annotated[list[str] | None, typer.Argument(show_default=False)] = None,
    output: Annotated[Path, typer.Option("-o", "--output", help="The bundle to write.")] = Path(
        "recordings.zip"
    ),
    tag: Annotated[str | None, typer.Option("--tag", help="Every ended run with this tag.")] = None,
    fixture_runs: Annotated[
        Path | None,
        typer.Option("--fixture-runs", help="A {taskId: runId} map: export the runs it names."),
    ] = None,
    baseline: Annotated[
        str | None, typer.Option("--baseline", help="Also export this eval run (a baseline).")
    ] = None,
    tenant: Tenant = "dev",
    data_dir: DataDir = Path(".wopeval"),
    database_url: DatabaseUrl = None,
) -> None:
    """Write runs with every record a replay reads to one checksummed bundle."""
    wanted = list(run_ids or [])
    if fixture_runs is not None:
        wanted += list(_fixture_map(fixture_runs).values())
    if baseline is not None:
        wanted.append(baseline)
    if not wanted and tag is None:
        raise typer.BadParameter("name runs, --tag, --fixture-runs or --baseline")
    owners = {run_id.partition("/")[0] for run_id in wanted}
    if len(owners) > 1:
        raise typer.BadParameter(f"the runs belong to several tenants: {sorted(owners)}")
    tenant = owners.pop() if owners else tenant
    settings = build_settings({"data_dir": data_dir, "database_url": database_url})
    exported = asyncio.run(_export(settings, tenant, wanted, tag, output))
    typer.echo(f"exported {len(exported)} runs of tenant {tenant!r} to {output}")


@app.command("import")
def import_(
    bundle: Annotated[Path, typer.Argument(show_default=False, help="The bundle to read.")],
    tenant: Annotated[
        str, typer.Option("--tenant", help="The tenant the runs belong to here.")
    ] = "dev",
    data_dir: DataDir = Path(".wopeval"),
    database_url: DatabaseUrl = None,
) -> None:
    """Load a bundle's runs into this store under TENANT, keeping their hex ids."""
    from wopeval import recordings

    # The whole bundle is checked before the store is opened: a bad one changes nothing.
    try:
        loaded = recordings.read_bundle(bundle)
    except recordings.BundleError as error:
        raise _refused(str(error)) from None
    settings = build_settings({"data_dir": data_dir, "database_url": database_url})
    from wopeval.hosting.ownership import DatabaseOwned, claim, private_directory

    private_directory(settings.data_dir)
    try:
        lease = claim(settings)
    except DatabaseOwned as owned:
        typer.echo(f"wopeval recordings import: refused: {owned}. Nothing was changed.", err=True)
        raise typer.Exit(DATABASE_OWNED) from None
    try:
        imported = asyncio.run(_import(settings, loaded, tenant))
    finally:
        lease.release()
    typer.echo(f"imported {len(imported)} runs into tenant {tenant!r}:")
    for run_id in imported:
        typer.echo(f"  {run_id}")


def _fixture_map(path: Path) -> dict[str, str]:
    try:
        return client.read_fixture_map(path)
    except client.ClientError as exc:
        raise typer.BadParameter(str(exc), param_hint="--fixture-runs") from None


async def _export(
    settings: Settings, tenant: str, run_ids: list[str], tag: str | None, output: Path
) -> list[str]:
    from wopeval import recordings
    from wopeval.engine.runlog.steps import now
    from wopeval.store import Store

    store = await Store.open(settings.resolved_database_url())
    try:
        async with store.reading() as uow:
            if tag is not None:
                run_ids = run_ids + await recordings.tagged_run_ids(uow.connection, tenant, tag)
            if not run_ids:
                raise _refused(f"no ended run of tenant {tenant!r} carries the tag {tag!r}")
            origin = recordings.Origin(host=socket.gethostname(), tenant=tenant)
            try:
                done = await recordings.export_runs(uow.connection, run_ids, origin, now(), output)
            except recordings.BundleError as error:
                raise _refused(str(error)) from None
        return done.run_ids
    finally:
        await store.close()


async def _import(settings: Settings, loaded: Bundle, tenant: str) -> list[str]:
    from wopeval import recordings
    from wopeval.store import Store

    store = await Store.open(settings.resolved_database_url())
    try:
        async with store.transaction() as uow:
            try:
                done = await recordings.import_bundle(uow.connection, loaded, tenant)
            except recordings.BundleError as error:
                raise _refused(str(error)) from None
        return done.run_ids
    finally:
        await store.close()


def _refused(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(4)
