"""`wopeval runs list|show|events`: read runs over the wire; every listing has `--json`."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from wopeval import client
from wopeval.cli._exit import Group
from wopeval.cli._options import (
    DEFAULT_DATA_DIR,
    ApiKeyOption,
    DatabaseUrlOption,
    DataDirOption,
    ProjectOption,
    Target,
    UrlOption,
    connect,
    emit,
    guarded,
)
from wopeval.cli._render import events_table, run_details, runs_table

app = typer.Typer(
    cls=Group,
    name="runs",
    help="List runs, show one, or print its events.",
    no_args_is_help=True,
    add_completion=False,
)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
RunIdArgument = Annotated[str, typer.Argument(show_default=False)]


@app.command("list")
def list_runs(
    limit: Annotated[int, typer.Option("--limit", min=1, max=200, help="At most N runs.")] = 20,
    workflow: Annotated[
        str | None, typer.Option("--workflow", help="Only runs of this workflowId (or suiteId).")
    ] = None,
    status: Annotated[
        str | None, typer.Option("--status", help="Only runs in this status.")
    ] = None,
    as_json: JsonFlag = False,
    url: UrlOption = None,
    api_key: ApiKeyOption = None,
    data_dir: DataDirOption = DEFAULT_DATA_DIR,
    project: ProjectOption = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """The newest runs first."""
    target = Target(url, api_key, data_dir, project, database_url)

    def body() -> None:
        with connect(target) as host:
            page = host.list_runs(limit=limit, workflow_id=workflow, status=status)
        emit(page, as_json, lambda: runs_table(page.get("runs") or []))

    guarded(body)


@app.command("show")
def show_run(
    run_id: RunIdArgument,
    as_json: JsonFlag = False,
    url: UrlOption = None,
    api_key: ApiKeyOption = None,
    data_dir: DataDirOption = DEFAULT_DATA_DIR,
    project: ProjectOption = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """One run's snapshot, and its eval summary when it is a finished eval run."""
    target = Target(url, api_key, data_dir, project, database_url)

    def body() -> None:
        with connect(target) as host:
            snapshot = host.get_run(run_id)
            raw = _summary_or_none(host, run_id)
        summary = client.summary_from_wire(raw) if raw is not None else None
        document = {"run": snapshot, "evalSummary": raw}
        emit(document, as_json, lambda: run_details(snapshot, summary))

    guarded(body)


@app.command("events")
def run_events(
    run_id: RunIdArgument,
    event_type: Annotated[
        str | None,
        typer.Option("--type", help="Only events whose type starts with this (e.g. eval.)."),
    ] = None,
    as_json: JsonFlag = False,
    url: UrlOption = None,
    api_key: ApiKeyOption = None,
    data_dir: DataDirOption = DEFAULT_DATA_DIR,
    project: ProjectOption = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """The run's event log so far, in sequence order."""
    target = Target(url, api_key, data_dir, project, database_url)

    def body() -> None:
        with connect(target) as host:
            events = client.all_events(host, run_id)
        if event_type:
            events = [e for e in events if str(e.get("type", "")).startswith(event_type)]
        emit({"runId": run_id, "events": events}, as_json, lambda: events_table(events))

    guarded(body)


def _summary_or_none(host: client.WireClient, run_id: str) -> dict[str, Any] | None:
    """The summary of a finished eval run; None for a workflow run or one still running."""
    try:
        return host.eval_summary(run_id)
    except client.HostError as exc:
        if exc.status in (404, 409):
            return None
        raise
