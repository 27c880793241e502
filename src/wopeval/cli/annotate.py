"""`wopeval annotate RUN [TASK]`: a reviewer's label on a run or one task of an eval run.

`--label pass|fail` (with `--note`) records an RFC 0056 annotation through the
host's `POST /runs/{runId}/annotations`, embedded or remote; `--list` prints the
run's annotations, `--json` as the host sent them (docs/annotations.md).
"""

from __future__ import annotations

import enum
from typing import Annotated, Any

import typer
from rich.table import Table

from wopeval.cli._exit import CliError, Command
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
from wopeval.cli._render import short_time
from wopeval.wire.annotations import (
    FAIL,
    PASS,
    AnchorIn,
    Annotation,
    CreateAnnotationRequest,
    LabelSignal,
)

SETTINGS: dict[str, Any] = {"cls": Command}
"""How main.py registers the command: usage errors exit 4."""


class Label(enum.StrEnum):
    PASS = PASS
    FAIL = FAIL


def annotate(
    run_id: Annotated[str, typer.Argument(help="A run.", show_default=False)],
    task_id: Annotated[
        str | None,
        typer.Argument(help="One task of it (an eval run), or one node.", show_default=False),
    ] = None,
    label: Annotated[
        Label | None, typer.Option("--label", help="The verdict on the output.")
    ] = None,
    note: Annotated[str | None, typer.Option("--note", help="Why, in a few words.")] = None,
    listing: Annotated[
        bool, typer.Option("--list", help="List the run's annotations instead.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead.")] = False,
    url: UrlOption = None,
    api_key: ApiKeyOption = None,
    data_dir: DataDirOption = DEFAULT_DATA_DIR,
    project: ProjectOption = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Label RUN_ID (or its TASK_ID) pass or fail, or --list its annotations.

    Exit 0 when recorded or listed, 4 on a usage, connection or host error.
    """
    target = Target(url, api_key, data_dir, project, database_url, reads_only=True)
    if listing:
        if label is not None or note is not None or task_id is not None:
            raise typer.BadParameter("--list takes only the run", param_hint="--list")
        guarded(lambda: _list(target, run_id, as_json))
        return
    if label is None:
        raise typer.BadParameter("give --label pass|fail (or --list)", param_hint="--label")
    request = CreateAnnotationRequest(
        signal=LabelSignal(kind="label", label=label.value),
        target=AnchorIn(nodeId=task_id) if task_id is not None else None,
        note=note,
    )
    guarded(lambda: _record(target, run_id, request, as_json))


def _record(target: Target, run_id: str, request: CreateAnnotationRequest, as_json: bool) -> None:
    with connect(target) as host:
        made = host.annotate(run_id, request)
    where = f"task {made.target.nodeId} of " if made.target.nodeId else ""
    emit(made.to_wire(), as_json, lambda: f"labelled {where}{run_id} {_signal(made)}")


def _list(target: Target, run_id: str, as_json: bool) -> None:
    with connect(target) as host:
        host.get_run(run_id)  # an unknown or foreign run is refused as the host refuses it
        found = host.annotations(run_id)
    if found is None:
        raise CliError("the host does not offer annotations (no `feedback` in its discovery)")
    document = {"annotations": [annotation.to_wire() for annotation in found]}
    emit(document, as_json, lambda: _table(run_id, found))


def _table(run_id: str, found: list[Annotation]) -> Table:
    table = Table(title=f"annotations of {run_id}", title_justify="left")
    for column in ("created", "task", "signal", "note", "by"):
        table.add_column(column)
    for annotation in found:
        table.add_row(
            short_time(annotation.createdAt),
            annotation.target.nodeId or "(run)",
            _signal(annotation),
            annotation.note or "",
            annotation.actor.principalRef,
        )
    return table


def _signal(annotation: Annotation) -> str:
    """The signal in a word: `pass`, `rating 4`, `flag`, `correction`."""
    signal = annotation.signal
    if isinstance(signal, LabelSignal):
        return signal.label
    if signal.kind == "rating":
        return f"rating {signal.rating}"
    return signal.kind
