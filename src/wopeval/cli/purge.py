"""`wopeval purge`: erase recorded tool content past the retention period."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from wopeval.cli._exit import DATABASE_OWNED
from wopeval.cli.serve import build_settings

if TYPE_CHECKING:
    from wopeval.engine.runs.erasure import Purged


def purge(
    older_than_days: Annotated[
        int | None,
        typer.Option(
            min=1,
            envvar="WOPEVAL_RETENTION_DAYS",
            help="Erase tool content of runs that finished more than this many days ago.",
        ),
    ] = None,
    data_dir: Annotated[Path, typer.Option(envvar="WOPEVAL_DATA_DIR")] = Path(".wopeval"),
    database_url: Annotated[str | None, typer.Option(envvar="WOPEVAL_DATABASE_URL")] = None,
) -> None:
    """Erase the recorded tool content (and every copy derived from it) of expired runs."""
    if older_than_days is None:
        raise typer.BadParameter("give --older-than-days (or WOPEVAL_RETENTION_DAYS)")
    settings = build_settings({"data_dir": data_dir, "database_url": database_url})
    # The store loads only for this command, so other commands start fast.
    from wopeval.hosting.ownership import DatabaseOwned, claim

    try:
        lease = claim(settings)
    except DatabaseOwned as owned:
        typer.echo(
            f"wopeval purge: refused: {owned}. A running host erases on its own schedule "
            "when started with --retention-days. Nothing was changed.",
            err=True,
        )
        raise typer.Exit(DATABASE_OWNED) from None
    try:
        purged = asyncio.run(_purge(settings.resolved_database_url(), older_than_days))
    finally:
        lease.release()
    erased = purged.erased
    typer.echo(
        f"erased tool content of {erased.runs} runs "
        f"({erased.calls} calls, {erased.copies} derived copies)"
    )
    if purged.deferred:
        typer.echo(
            f"deferred {purged.deferred} expired runs: a run that copied their content has "
            "not ended yet; purge again once it has"
        )


async def _purge(url: str, days: int) -> Purged:
    from wopeval.engine.runs.erasure import purge_expired
    from wopeval.store import Store

    store = await Store.open(url)
    try:
        return await purge_expired(store, days)
    finally:
        await store.close()
