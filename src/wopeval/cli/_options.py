"""Options every host-facing command shares, and the one place that turns them into a client.

Without `--url` a command starts an embedded host over the data directory and
project `wopeval serve` would use (same options, same `WOPEVAL_*` names), or,
when a live `wopeval serve` owns that data directory's database, talks to it;
with `--url` it talks to that host over the wire and starts nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console, RenderableType
from rich.markup import escape

from wopeval import client
from wopeval.cli._exit import CliError, ExitCode
from wopeval.hosting.collector import paused_for_startup

if TYPE_CHECKING:
    # A field's annotation only: the task details' models are not a command's to load.
    from wopeval.wire.eval_options import ToolsChangedPolicy

UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        envvar="WOPEVAL_URL",
        help="A running OpenWOP host; without it an embedded host is started.",
        rich_help_panel="Host",
    ),
]
ApiKeyOption = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        envvar="WOPEVAL_API_KEY",
        help="Bearer key (default: the configured key; embedded, the command's own "
        "session key, or DATA_DIR/dev-api-key for the serve that owns DATA_DIR).",
        rich_help_panel="Host",
    ),
]
DataDirOption = Annotated[
    Path,
    typer.Option(
        "--data-dir",
        envvar="WOPEVAL_DATA_DIR",
        help="Embedded host: where the SQLite file and dev key live (as `wopeval serve`).",
        rich_help_panel="Host",
    ),
]
ProjectOption = Annotated[
    Path | None,
    typer.Option(
        "--project",
        envvar="WOPEVAL_PROJECT",
        help="Embedded host: the directory holding wopeval.toml (or a .toml manifest).",
        rich_help_panel="Host",
    ),
]
DatabaseUrlOption = Annotated[
    str | None,
    typer.Option(
        "--database-url",
        envvar="WOPEVAL_DATABASE_URL",
        help="Embedded host: postgresql+psycopg://… (default: SQLite in DATA_DIR).",
        rich_help_panel="Host",
    ),
]
DEFAULT_DATA_DIR = Path(".wopeval")
T = TypeVar("T")
PIPED_WIDTH = 160


@dataclass(frozen=True)
class Target:
    """Where a command's requests go."""

    url: str | None
    api_key: str | None
    data_dir: Path
    project: Path | None
    database_url: str | None
    replay_model: bool = False
    """`--replay-model`: the embedded host replays recorded model answers (docs/llm.md)."""
    offline: bool = False
    """`--offline`: the embedded host runs no tool live (docs/ci.md)."""
    tools_changed: ToolsChangedPolicy = "report"
    """`--tools-changed fail`: the embedded host fails a task whose MCP tools changed."""
    reads_only: bool = False
    """The command reads or publishes and starts no run: an embedded host it starts connects
    no MCP server and runs no tool, so reading what a tool recorded never needs the tool's
    secret (a live owner of the database is used as it is)."""


@contextlib.contextmanager
def connect(target: Target) -> Iterator[client.WireClient]:
    """A client on the remote host, or on an embedded one started (and stopped) here."""
    if target.url:
        if target.replay_model:
            raise CliError(
                "--replay-model configures the embedded host; for the host at --url set "
                'model_replay = "recorded" on the agent or WOPEVAL_EVAL_MODEL_REPLAY=true'
            )
        if target.offline:
            raise CliError(
                "--offline runs an embedded host with live tools disabled; a host at --url "
                "decides for itself whether its tools run live: drop --url"
            )
        if target.tools_changed == "fail":
            raise CliError(
                "--tools-changed fail configures the embedded host; for the host at --url "
                "set WOPEVAL_EVAL_TOOLS_CHANGED=fail"
            )
        if not target.api_key:
            raise CliError("--url needs --api-key (or WOPEVAL_API_KEY)")
        with client.WireClient(target.url, target.api_key) as host:
            yield host
        return
    with paused_for_startup():  # the embedded host's client side is loaded here
        settings = client.embedded_settings(
            data_dir=target.data_dir,
            project=target.project,
            database_url=target.database_url,
            replay_model=target.replay_model,
            offline=target.offline or target.reads_only,
            tools_changed=target.tools_changed,
        )
    with client.embedded_client(
        settings, target.api_key, notify=_note, reads_only=target.reads_only
    ) as host:
        yield host


def _note(message: str) -> None:
    stderr_console().print(message, highlight=False, markup=False)


def stderr_console() -> Console:
    return Console(stderr=True, soft_wrap=True)


def stdout_console() -> Console:
    console = Console(soft_wrap=True)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        # Piped or captured output (CI logs): Rich's 80-column default truncates the tables.
        console.width = PIPED_WIDTH
    return console


def emit(document: Any, as_json: bool, render: Callable[[], RenderableType]) -> None:
    """Print a listing: `document` as JSON with `--json`, else the rendered table."""
    if as_json:
        typer.echo(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        stdout_console().print(render(), highlight=False)


def fail(message: str) -> NoReturn:
    """Report an error the way every command does, and exit 4."""
    stderr_console().print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    raise typer.Exit(ExitCode.ERROR)


def _what_to_do(exc: client.HostError) -> str:
    """The fix for a refusal whose cause is the caller's setup, not its request."""
    if exc.status == 401:
        return (
            ".\n  Check --api-key (or WOPEVAL_API_KEY): the host does not accept this key "
            "(a host started without keys takes DATA_DIR/dev-api-key)."
        )
    if exc.status >= 500:
        return ".\n  The host failed: its log says why; the command can be run again."
    return ""


def guarded(action: Callable[[], T]) -> T:
    """Run a command body; usage, connection and host errors become one message and exit 4."""
    try:
        return action()
    except client.HostError as exc:
        fail(f"the host refused: {exc}{_what_to_do(exc)}")
    except (CliError, client.ClientError) as exc:
        fail(str(exc))
    except OSError as exc:  # a file that cannot be read or written
        fail(f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc))
