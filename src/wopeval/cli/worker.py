"""`wopeval worker`: execute queued runs (queue mode, PostgreSQL; docs/deploy.md)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Annotated

import typer

from wopeval.cli.serve import (
    MaxBodyBytesOption,
    build_settings,
    refuse_in_process_owner,
    require_postgres,
)


def worker(
    database_url: Annotated[
        str,
        typer.Option(envvar="WOPEVAL_DATABASE_URL", help="postgresql+psycopg://… (required)."),
    ],
    project: Annotated[
        Path | None,
        typer.Option(
            envvar="WOPEVAL_PROJECT",
            help="The project the API processes load (it must be the same: its digest "
            "names the queue this worker takes work from).",
        ),
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(min=1, envvar="WOPEVAL_QUEUE_CONCURRENCY", help="Trials at once (16)."),
    ] = None,
    host: Annotated[
        str,
        typer.Option(
            envvar="WOPEVAL_HOST",
            help="Interface of the HTTP server (health, agents' MCP and model endpoints).",
        ),
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(envvar="WOPEVAL_PORT", help="Port of the HTTP server (0: any).")
    ] = 8738,
    data_dir: Annotated[
        Path, typer.Option(envvar="WOPEVAL_DATA_DIR", help="Working directory for the host.")
    ] = Path(".wopeval"),
    heartbeat_seconds: Annotated[
        float | None, typer.Option(min=0.01, help="Heartbeat interval (10).")
    ] = None,
    stall_seconds: Annotated[
        float | None,
        typer.Option(min=0.01, help="A worker silent this long is taken for dead (30)."),
    ] = None,
    reconcile_seconds: Annotated[
        float | None, typer.Option(min=0.01, help="Stalled/orphaned work check interval (10).")
    ] = None,
    watch_seconds: Annotated[
        float | None, typer.Option(min=0.01, help="Run state (pause, cancel) read interval (1).")
    ] = None,
    max_stalls: Annotated[
        int | None, typer.Option(min=1, help="Stalls of one job that fail its run (3).")
    ] = None,
    shutdown_grace_seconds: Annotated[
        float | None, typer.Option(min=0, help="On SIGTERM, time for running trials (60).")
    ] = None,
    max_body_bytes: MaxBodyBytesOption = None,
) -> None:
    """Execute the runs that `wopeval serve --executor queue` processes enqueue.

    Any number of workers, on any machines, share the API processes' PostgreSQL
    database and --project. SIGTERM lets running trials finish and hands the rest
    back to the queue.
    """
    overrides: dict[str, object] = {
        "host": host,
        "port": port,
        "data_dir": data_dir,
        "database_url": database_url,
    }
    if project is not None:
        overrides["project"] = project
    if max_body_bytes is not None:
        overrides["max_body_bytes"] = max_body_bytes
    settings = build_settings(overrides)
    queue = settings.queue
    given = {
        "concurrency": concurrency,
        "heartbeat_seconds": heartbeat_seconds,
        "stall_seconds": stall_seconds,
        "reconcile_seconds": reconcile_seconds,
        "watch_seconds": watch_seconds,
        "max_stalls": max_stalls,
        "shutdown_grace_seconds": shutdown_grace_seconds,
    }
    for name, value in given.items():
        if value is not None:
            setattr(queue, name, value)
    require_postgres(settings, "worker")
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # Procrastinate logs every job's start and end at INFO: too much for thousands of trials.
    logging.getLogger("procrastinate").setLevel(logging.WARNING)
    from wopeval.store import LeaseHeld
    from wopeval.worker.app import run_worker

    def announce(url: str) -> None:
        typer.echo(f"wopeval worker: health on {url}/host/wopeval/health", err=True)

    try:
        asyncio.run(run_worker(settings, announce))
    except LeaseHeld as held:
        refuse_in_process_owner(held, "worker")
