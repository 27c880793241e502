"""`wopeval ui`: open the dashboard of a data directory's host in a browser.

When a `wopeval serve` already owns the data directory's database, the
command opens that host's dashboard and exits. Otherwise it starts the host
itself on loopback, as `serve` would (it announces itself, so other commands
on the data directory talk to it), opens the dashboard, and serves until
Ctrl-C. Either way it prints the URL and how to sign in: with the `dev`
tenant's key from `DATA_DIR/dev-api-key`, or one of the configured keys.
The key is never put in the URL.
"""

from __future__ import annotations

import webbrowser
from pathlib import Path
from typing import Annotated

import typer

from wopeval import client
from wopeval.cli._exit import DATABASE_OWNED
from wopeval.cli._options import (
    DEFAULT_DATA_DIR,
    DatabaseUrlOption,
    DataDirOption,
    ProjectOption,
    fail,
)
from wopeval.cli.serve import serve_host
from wopeval.settings import Settings

DASHBOARD_PATH = "/ui/"


def ui(
    port: Annotated[
        int,
        typer.Option(min=0, max=65535, help="Loopback port to serve on (0: any free port)."),
    ] = 0,
    no_open: Annotated[
        bool, typer.Option("--no-open", help="Print the URL without opening a browser.")
    ] = False,
    data_dir: DataDirOption = DEFAULT_DATA_DIR,
    project: ProjectOption = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Open the dashboard (runs, eval results, compare, suites) of DATA_DIR's host.

    Uses the `wopeval serve` that owns DATA_DIR when there is one; otherwise
    serves DATA_DIR on 127.0.0.1 itself until Ctrl-C.
    """
    try:
        settings = client.embedded_settings(
            data_dir=data_dir, project=project, database_url=database_url
        ).model_copy(update={"port": port})
    except client.ClientError as exc:
        fail(str(exc))
    from wopeval.hosting.ownership import DatabaseOwned, claim

    try:
        lease = claim(settings)
    except DatabaseOwned as owned:
        if owned.url is None:
            typer.echo(f"wopeval ui: {owned}; let it finish or stop it first.", err=True)
            raise typer.Exit(DATABASE_OWNED) from None
        typer.echo(f"wopeval ui: {data_dir} is served by `wopeval serve` (pid {owned.pid}).")
        _show(owned.url, settings, open_browser=not no_open)
        return
    try:
        serve_host(
            settings,
            lease,
            on_started=lambda url: _show(url, settings, open_browser=not no_open),
            log_level="warning",
        )
    finally:
        lease.release()


def _show(url: str, settings: Settings, *, open_browser: bool) -> None:
    dashboard = url.rstrip("/") + DASHBOARD_PATH
    typer.echo(f"wopeval ui: the dashboard is at {dashboard}")
    typer.echo(f"wopeval ui: sign in with {_which_key(settings)}")
    if open_browser:
        webbrowser.open(dashboard)


def _which_key(settings: Settings) -> str:
    if settings.api_keys:
        return "one of the API keys this host is configured with (WOPEVAL_API_KEYS)"
    from wopeval.hosting.discovery import DEV_KEY_FILE

    key_file: Path = settings.data_dir / DEV_KEY_FILE
    return f"the API key of tenant 'dev', in {key_file}"
