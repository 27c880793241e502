"""`wopeval serve`: start an OpenWOP v2 host."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from wopeval.settings import Settings, parse_api_keys


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
) -> None:
    """Start an OpenWOP v2 host on HOST:PORT."""
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
    try:
        settings = Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        raise typer.BadParameter(
            "; ".join(str(error["msg"]).removeprefix("Value error, ") for error in exc.errors())
        ) from exc
    # The server stack loads only for this command, so other commands start fast.
    import uvicorn

    from wopeval.api.app import create_app

    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level="info")
