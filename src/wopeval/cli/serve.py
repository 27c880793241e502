"""`wopeval serve`: start an OpenWOP v2 host."""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from pydantic import ValidationError

from wopeval.cli._exit import DATABASE_OWNED
from wopeval.settings import Settings, parse_api_keys

if TYPE_CHECKING:
    import uvicorn

    from wopeval.engine.runs.run_queue import QueueFactory
    from wopeval.store import Lease, LeaseHeld

STARTUP_FAILED = 3
"""Exit code: the host could not start (uvicorn's own code for it)."""
BACKLOG = 2048


MaxBodyBytesOption = Annotated[
    int | None,
    typer.Option(
        min=1,
        envvar="WOPEVAL_MAX_BODY_BYTES",
        help="Refuse request bodies larger than this with 413 (default 1 MiB).",
    ),
]
"""The body limit of a serving process: an API process's routes, a worker's invocation
endpoints."""


class Executor(enum.StrEnum):
    IN_PROCESS = "in-process"
    QUEUE = "queue"


def serve(
    host: Annotated[
        str, typer.Option(envvar="WOPEVAL_HOST", help="Interface to bind.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(envvar="WOPEVAL_PORT", help="TCP port.")] = 8737,
    data_dir: Annotated[
        Path,
        typer.Option(envvar="WOPEVAL_DATA_DIR", help="Where the SQLite file and dev key live."),
    ] = Path(".wopeval"),
    database_url: Annotated[
        str | None,
        typer.Option(
            envvar="WOPEVAL_DATABASE_URL", help="postgresql+psycopg://… (default: SQLite)."
        ),
    ] = None,
    api_key: Annotated[
        list[str] | None,
        typer.Option(
            "--api-key", help="TENANT=KEY; repeat for more tenants (env WOPEVAL_API_KEYS)."
        ),
    ] = None,
    project: Annotated[
        Path | None,
        typer.Option(
            envvar="WOPEVAL_PROJECT", help="Directory holding wopeval.toml (or a .toml manifest)."
        ),
    ] = None,
    retention_days: Annotated[
        int | None,
        typer.Option(
            min=1,
            envvar="WOPEVAL_RETENTION_DAYS",
            help="Erase recorded tool content of runs finished more than this many days ago.",
        ),
    ] = None,
    max_body_bytes: MaxBodyBytesOption = None,
    executor: Annotated[
        Executor,
        typer.Option(
            envvar="WOPEVAL_EXECUTOR",
            help="in-process: this process executes its runs. queue (PostgreSQL): it only "
            "serves the API; `wopeval worker` processes execute (docs/deploy.md).",
        ),
    ] = Executor.IN_PROCESS,
    chunk_size: Annotated[
        int | None,
        typer.Option(
            min=1,
            envvar="WOPEVAL_QUEUE_CHUNK_SIZE",
            help="Queue mode: (task, trial) pairs per eval job (default 32).",
        ),
    ] = None,
) -> None:
    """Start an OpenWOP v2 host on HOST:PORT.

    In-process (the default), one host process owns a database: a second `serve`
    on it exits 5 and changes nothing; CLI commands on the same data directory talk
    to the running host. With `--executor queue` (PostgreSQL) any number of API
    processes share it with `wopeval worker` processes.
    """
    overrides: dict[str, object] = {"host": host, "port": port, "data_dir": data_dir}
    if database_url:
        overrides["database_url"] = database_url
    if api_key:
        try:
            overrides["api_keys"] = parse_api_keys(api_key)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--api-key") from exc
    if project is not None:
        overrides["project"] = project
    if retention_days is not None:
        overrides["retention_days"] = retention_days
    if max_body_bytes is not None:
        overrides["max_body_bytes"] = max_body_bytes
    settings = build_settings(overrides)
    if chunk_size is not None:
        settings.queue.chunk_size = chunk_size
    if executor is Executor.QUEUE:
        _serve_queued(settings)
        return
    # The server stack loads only for this command, so other commands start fast.
    from wopeval.hosting.ownership import DatabaseOwned, DatabaseUnreachable, claim

    try:
        lease = claim(settings)
    except DatabaseUnreachable as unreachable:
        typer.echo(f"wopeval serve: {unreachable}", err=True)
        raise typer.Exit(STARTUP_FAILED) from None
    except DatabaseOwned as owned:
        use_it = (
            f", or use it: commands on this data directory find it, others take --url {owned.url}"
            if owned.url
            else ""
        )
        typer.echo(
            f"wopeval serve: refused: {owned}. Stop it first{use_it}. Nothing was changed.",
            err=True,
        )
        raise typer.Exit(DATABASE_OWNED) from None
    try:
        serve_host(settings, lease)
    finally:
        lease.release()


def build_settings(overrides: dict[str, object]) -> Settings:
    """`Settings` from the command line's values, a bad one reported as a usage error."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        raise typer.BadParameter(
            "; ".join(str(error["msg"]).removeprefix("Value error, ") for error in exc.errors())
        ) from exc


def require_postgres(settings: Settings, command: str) -> None:
    if not settings.resolved_database_url().startswith("postgresql"):
        typer.echo(
            f"wopeval {command}: queue mode needs PostgreSQL (--database-url postgresql+psycopg://…)",
            err=True,
        )
        raise typer.Exit(STARTUP_FAILED)


def _serve_queued(settings: Settings) -> None:
    """An API process of queue mode: no ownership lease, no run of its own."""
    require_postgres(settings, "serve")
    from wopeval.store import LeaseHeld, take_lease
    from wopeval.worker.queue import factory

    try:
        lease = take_lease(settings.resolved_database_url(), shared=True)
    except LeaseHeld as held:
        refuse_in_process_owner(held, "serve")
    try:
        serve_host(settings, lease, queue=factory(settings.queue))
    finally:
        lease.release()


def refuse_in_process_owner(held: LeaseHeld, command: str) -> NoReturn:
    typer.echo(
        f"wopeval {command}: refused: {held}, an in-process host; queue mode and an "
        "in-process host cannot share a database. Nothing was changed.",
        err=True,
    )
    raise typer.Exit(DATABASE_OWNED) from None


def serve_host(
    settings: Settings,
    lease: Lease | None,
    *,
    queue: QueueFactory | None = None,
    on_started: Callable[[str], None] | None = None,
    log_level: str = "info",
) -> None:
    """Serve on `settings` (holding `lease`; in queue mode a shared one, and `queue`) until
    interrupted; `on_started(url)` runs once the host answers."""
    import uvicorn

    from wopeval.hosting.app import host_app
    from wopeval.hosting.host import Serving
    from wopeval.hosting.loopback import bound_socket, served_config

    try:
        sock = bound_socket(settings.host, settings.port)
    except OSError as exc:
        typer.echo(
            f"wopeval serve: cannot listen on {settings.host}:{settings.port}: {exc}", err=True
        )
        raise typer.Exit(STARTUP_FAILED) from None
    # Listening from now on: a command that reads the announcement the host writes
    # during start-up waits in the backlog rather than being refused.
    sock.listen(BACKLOG)
    url = _reachable_url(settings.host, sock.getsockname()[1])
    role = Serving(url=url if queue is None else None)
    app = host_app(settings, role=role, lease=lease, queue=queue)
    server = uvicorn.Server(served_config(app, log_level=log_level, backlog=BACKLOG))
    typer.echo(f"wopeval: serving on {url} (data in {settings.data_dir})", err=True)
    if on_started is not None:
        _when_started(server, lambda: on_started(url))
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    if not server.started:
        raise typer.Exit(STARTUP_FAILED)


def _when_started(server: uvicorn.Server, action: Callable[[], None]) -> None:
    """Run `action` on a helper thread as soon as `server` has started (never if it stops first)."""

    def wait() -> None:
        while not server.started:
            if server.should_exit:
                return
            time.sleep(0.05)
        action()

    threading.Thread(target=wait, name="serve-started", daemon=True).start()


def _reachable_url(host: str, port: int) -> str:
    """The URL a command on this machine uses to reach a host bound to `host`."""
    wildcard = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}
    address = wildcard.get(host, host)
    return f"http://[{address}]:{port}" if ":" in address else f"http://{address}:{port}"
