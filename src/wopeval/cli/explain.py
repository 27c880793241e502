"""`wopeval explain RUN [TASK]`: why an eval run's tasks failed, from the host's task routes.

For each task that failed, regressed or had a failing trial (or the one named):
the reason, the expected and actual values and their diff, the tool trace with
each call replayed / live / MISS, and each miss's argument diff against the
closest recording. `--json` prints what the routes returned (docs/why.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

import typer
from pydantic import BaseModel
from rich.console import Group, RenderableType

from wopeval import client, reports
from wopeval.cli._exit import CliError, Command, ExitCode
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
from wopeval.cli._why import explanation, nothing_to_explain
from wopeval.wire.task_detail import TaskDetail

SETTINGS: dict[str, Any] = {"cls": Command}
"""How main.py registers the command: usage errors exit 4."""


def explain(
    run_id: Annotated[str, typer.Argument(help="An eval run.", show_default=False)],
    task_id: Annotated[
        str | None,
        typer.Argument(
            help="One task of it (default: every task that failed).", show_default=False
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the task routes' JSON instead.")
    ] = False,
    url: UrlOption = None,
    api_key: ApiKeyOption = None,
    data_dir: DataDirOption = DEFAULT_DATA_DIR,
    project: ProjectOption = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Why RUN_ID's tasks failed: reason, expected/actual diff, tool trace, fixture misses.

    Exit 0 when explained (whatever the tasks did), 4 on a usage, connection or host error.
    """
    target = Target(url, api_key, data_dir, project, database_url, reads_only=True)
    raise typer.Exit(guarded(lambda: run_explain(target, run_id, task_id, as_json)))


def run_explain(target: Target, run_id: str, task_id: str | None, as_json: bool) -> ExitCode:
    with connect(target) as host:
        host.get_run(run_id)  # an unknown or foreign run is refused as the host refuses it
        listing = client.fetch_why(host, run_id)
        if listing is None:
            raise CliError(
                f"no task details for {run_id}: it is not an eval run, or the host does not "
                "serve wopeval's task routes (GET /host/wopeval/runs/{runId}/tasks)"
            )
        wanted = _wanted(listing, run_id, task_id)
        why = client.with_details(host, listing, wanted)
    details = [why.details[name] for name in wanted]
    if task_id is not None:
        (detail,) = details
        emit(_document(detail), as_json, lambda: explanation(detail, every_trial=True))
        return ExitCode.OK
    document = {
        "runId": why.listing.runId,
        "tasks": [_document(line) for line in why.listing.tasks],
        "details": [_document(detail) for detail in details],
    }
    emit(document, as_json, lambda: _all(run_id, details))
    return ExitCode.OK


def _wanted(listing: reports.RunWhy, run_id: str, task_id: str | None) -> list[str]:
    lines = listing.listing.tasks
    if task_id is None:
        return [line.taskId for line in lines if reports.needs_explaining(line, line.verdict)]
    if listing.line(task_id) is None:
        known = ", ".join(line.taskId for line in lines) or "none"
        raise CliError(f"run {run_id} has no task {task_id!r} (its tasks: {known})")
    return [task_id]


def _all(run_id: str, details: Sequence[TaskDetail]) -> RenderableType:
    if not details:
        return nothing_to_explain(run_id)
    return Group(*(explanation(detail, every_trial=False) for detail in details))


def _document(shape: BaseModel) -> dict[str, Any]:
    """A route's body as the route wrote it (absent members stay absent)."""
    try:
        body: dict[str, Any] = shape.model_dump(mode="json", exclude_none=True)
    except ValueError:
        # A decision or a tool's answer nested past pydantic's limit, which its JSON mode
        # refuses ("Maximum serialization depth exceeded": the command crashed); its
        # Python mode gives the same JSON values.
        body = shape.model_dump(exclude_none=True)
    return body
