"""`wopeval runs list|show|events`: read runs over the wire; every listing has `--json`."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import typer
from rich.console import Group as Renderables
from rich.console import RenderableType
from rich.text import Text

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
from wopeval.cli._render import events_table, run_details, run_facts, runs_table
from wopeval.cli._said import idle_warnings, invocations_section

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
    tag: Annotated[str | None, typer.Option("--tag", help="Only runs carrying this tag.")] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", help="Only runs of (or invoking) this agent.")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", help="Only runs created since: an ISO date/time, or 30m, 24h, 7d."),
    ] = None,
    cursor: Annotated[
        str | None, typer.Option("--cursor", help="Start at this page (a listing's nextCursor).")
    ] = None,
    every: Annotated[bool, typer.Option("--all", help="Every page, not just the first.")] = False,
    as_json: JsonFlag = False,
    url: UrlOption = None,
    api_key: ApiKeyOption = None,
    data_dir: DataDirOption = DEFAULT_DATA_DIR,
    project: ProjectOption = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """The newest runs first, with their tags, agents, timing, and an eval run's score."""
    target = Target(url, api_key, data_dir, project, database_url, reads_only=True)
    after = parse_since(since) if since is not None else None

    def body() -> None:
        listed: list[client.RunSnapshot] = []
        next_cursor: str | None = None
        with connect(target) as host:
            pages = host.run_pages(
                limit=limit,
                cursor=cursor,
                workflow_id=workflow,
                status=status,
                tag=tag,
                agent_id=agent,
                created_after=after,
            )
            for page in pages:
                listed += page.runs
                next_cursor = page.nextCursor
                if not every:
                    break
        document: dict[str, Any] = {"runs": [run.document() for run in listed]}
        if next_cursor is not None:
            document["nextCursor"] = next_cursor
        emit(document, as_json, lambda: runs_table(listed, next_cursor))

    guarded(body)


def parse_since(value: str) -> str:
    """`--since`: an ISO date or date-time, or a span back from now (`30m`, `24h`, `7d`)."""
    span = re.fullmatch(r"(\d+)([mhd])", value.strip())
    if span is not None:
        unit = {"m": "minutes", "h": "hours", "d": "days"}[span.group(2)]
        return (datetime.now(UTC) - timedelta(**{unit: int(span.group(1))})).isoformat()
    try:
        moment = datetime.fromisoformat(value)
    except ValueError as exc:
        raise typer.BadParameter(
            "an ISO date or date-time, or 30m / 24h / 7d", param_hint="--since"
        ) from exc
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).isoformat()


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
    """One run's snapshot, its eval summary when it is a finished eval run, and its agents'
    invocations: idle ones, failed ones, and what each agent said (stderr)."""
    target = Target(url, api_key, data_dir, project, database_url, reads_only=True)

    def body() -> None:
        with connect(target) as host:
            snapshot = host.get_run(run_id)
            raw = _summary_or_none(host, run_id)
            eval_run = run_facts(snapshot).get("kind") == "eval"
            # An eval run has an invocation per trial: what its failed ones said is enough.
            said = client.fetch_invocations(
                host, run_id, lambda line: not eval_run or line.outcome == "failed"
            )
        summary = client.summary_from_wire(raw) if raw is not None else None
        document: dict[str, Any] = {"run": snapshot.document(), "evalSummary": raw}
        if said is not None:
            document["invocations"] = [
                line.model_dump(mode="json", exclude_none=True) for line in said.lines
            ]
            document["stderr"] = said.said

        def render() -> Renderables:
            parts: list[RenderableType] = [run_details(snapshot, summary)]
            parts += [Text(warning, style="yellow") for warning in idle_warnings(snapshot)]
            if said is not None:
                parts.append(invocations_section(said, eval_run=eval_run))
            return Renderables(*parts)

        emit(document, as_json, render)

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
    target = Target(url, api_key, data_dir, project, database_url, reads_only=True)

    def body() -> None:
        with connect(target) as host:
            events = client.all_events(host, run_id)
        if event_type:
            events = [e for e in events if e.type.startswith(event_type)]
        documents = [e.model_dump(mode="json", exclude_unset=True) for e in events]
        emit({"runId": run_id, "events": documents}, as_json, lambda: events_table(events))

    guarded(body)


def _summary_or_none(host: client.WireClient, run_id: str) -> dict[str, Any] | None:
    """The summary of a finished eval run; None for a workflow run or one still running."""
    try:
        return host.eval_summary(run_id)
    except client.HostError as exc:
        if exc.status in (404, 409):
            return None
        raise
