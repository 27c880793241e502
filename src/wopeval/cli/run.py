"""`wopeval run WORKFLOW_ID`: record a run from a terminal or a script.

The run's id, status and decision go to stdout; on stderr, a warning per agent
that recorded nothing a replay could test (docs/recordings.md, "Idle runs"), and
for a run that failed, the end of what each failed agent said (its stderr).

Exit codes: 0 the run completed; 1 it failed or was cancelled; 4 usage,
connection or host error, or the run failed because a model provider did not
answer an agent (its last model exchange: refused, unresolved, timed out, 429 or
5xx after retries), said in two lines, the cause and the fix (with `--no-wait`,
0 once the host accepted the run).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from wopeval import client
from wopeval.cli._exit import Command
from wopeval.cli._options import (
    DEFAULT_DATA_DIR,
    ApiKeyOption,
    DatabaseUrlOption,
    DataDirOption,
    ProjectOption,
    Target,
    UrlOption,
    connect,
    guarded,
    stderr_console,
    stdout_console,
)
from wopeval.cli._said import RUN_STDERR_LINES, idle_warnings, said_blocks
from wopeval.wire.json_text import JsonObject

SETTINGS: dict[str, Any] = {"cls": Command}
RUN_FAILED = 1


def run(
    workflow_id: Annotated[str, typer.Argument(show_default=False, help="The workflow to run.")],
    input_: Annotated[
        str | None,
        typer.Option(
            "--input",
            help="The run's inputs: a JSON object, or @FILE holding one.",
            show_default=False,
        ),
    ] = None,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", help="A tag the run carries; repeat for more.")
    ] = None,
    wait: Annotated[
        bool, typer.Option("--wait/--no-wait", help="Follow the run to its end (default).")
    ] = True,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the run's snapshot as JSON at the end.")
    ] = False,
    url: UrlOption = None,
    api_key: ApiKeyOption = None,
    data_dir: DataDirOption = DEFAULT_DATA_DIR,
    project: ProjectOption = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Create a workflow run, follow it, and print its id, status and decision."""
    target = Target(url, api_key, data_dir, project, database_url)
    body: dict[str, Any] = {"workflowId": workflow_id}
    if input_ is not None:
        body["inputs"] = _inputs(input_)
    if tag:
        body["tags"] = list(tag)

    def execute() -> int:
        with connect(target) as host:
            created = host.create_run(body)
            run_id = created.runId
            if not wait:
                _print(as_json, created.document(), f"{run_id} {created.status}")
                return 0
            client.follow(host, run_id)
            snapshot = host.get_run(run_id)
            outputs = client.run_outputs(host, run_id)
            completed = snapshot.status == "completed"
            # What a failed agent said: a run that failed says why beyond its exit status.
            said = None
            outage: client.ModelUnavailable | None = None
            if not completed:
                said = client.fetch_invocations(host, run_id, lambda i: i.outcome == "failed")
                failed = [] if said is None else [i for i in said.lines if i.outcome == "failed"]
                try:
                    client.require_run_models_answered(host, run_id, failed)
                except client.ModelUnavailable as exc:
                    outage = exc  # said once the run's own lines are out
        document = snapshot.document()
        if outputs is not None:
            document["outputs"] = outputs
        _print(as_json, document, _summary_line(snapshot, outputs or {}))
        notes = stderr_console()
        for warning in idle_warnings(snapshot):
            notes.print(warning, style="yellow", highlight=False, markup=False)
        for block in [] if said is None else said_blocks(said, last_lines=RUN_STDERR_LINES):
            notes.print(block, highlight=False)
        if outage is not None:
            raise outage  # the provider failed, not the agent: exit 4 (guarded)
        return 0 if completed else RUN_FAILED

    raise typer.Exit(guarded(execute))


def _inputs(given: str) -> dict[str, Any]:
    text = given
    if given.startswith("@"):
        path = Path(given[1:])
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise typer.BadParameter(f"{path}: {exc.strerror}", param_hint="--input") from exc
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise typer.BadParameter(f"not JSON: {exc}", param_hint="--input") from exc
    if not isinstance(document, dict):
        raise typer.BadParameter("the inputs must be a JSON object", param_hint="--input")
    return document


def decisions(outputs: JsonObject) -> JsonObject:
    """Each node's decision, from a finished workflow run's outputs (`run.completed`)."""
    return {
        node: value["decision"]
        for node, value in outputs.items()
        if isinstance(value, dict) and "decision" in value
    }


def _summary_line(snapshot: client.RunSnapshot, outputs: JsonObject) -> str:
    line = f"{snapshot.runId} {snapshot.status}"
    decided = decisions(outputs)
    if len(decided) == 1:
        line += " decision=" + json.dumps(next(iter(decided.values())), ensure_ascii=False)
    elif decided:
        line += " decisions=" + json.dumps(decided, ensure_ascii=False)
    if snapshot.error:
        line += f" error={snapshot.error_line()}"
    return line


def _print(as_json: bool, document: dict[str, Any], line: str) -> None:
    if as_json:
        typer.echo(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        stdout_console().print(line, highlight=False, markup=False)
