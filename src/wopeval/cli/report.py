"""`wopeval report`: write the reports of a finished eval run (HTML, JUnit, JSON, Markdown)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from wopeval import client
from wopeval.cli._exit import CliError, Command, ExitCode, exit_code_for
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
)
from wopeval.cli._outputs import (
    HtmlOption,
    JsonFileOption,
    JunitOption,
    MarkdownOption,
    ReportFiles,
    print_outcome,
    read_why,
    write_reports,
)
from wopeval.cli._render import result_lines

SETTINGS: dict[str, Any] = {"cls": Command}
"""How main.py registers the command: usage errors exit 4."""


def report(
    run_id: Annotated[str, typer.Argument(help="A finished eval run.", show_default=False)],
    html: HtmlOption = None,
    junit: JunitOption = None,
    json_file: JsonFileOption = None,
    markdown: MarkdownOption = None,
    url: UrlOption = None,
    api_key: ApiKeyOption = None,
    data_dir: DataDirOption = DEFAULT_DATA_DIR,
    project: ProjectOption = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Write the report files of RUN_ID and print its table. Exit 0 when written, 4 on error."""
    files = ReportFiles(junit=junit, json=json_file, html=html, markdown=markdown)
    if not files.requested():
        raise typer.BadParameter("name at least one of --html, --junit, --json or --markdown")
    target = Target(url, api_key, data_dir, project, database_url, reads_only=True)
    raise typer.Exit(guarded(lambda: run_report(target, run_id, files)))


def run_report(target: Target, run_id: str, files: ReportFiles) -> ExitCode:
    with connect(target) as host:
        summary = client.ensure_verdict(host, client.fetch_summary(host, run_id))
        facts = client.run_facts(host, run_id)
        why = read_why(host, run_id, summary, files)
    if facts.status not in (None, "completed"):
        raise CliError(f"run {run_id} ended {facts.status}; there is no verdict to report")
    written = write_reports(files, summary, facts, exit_code_for(summary, strict=False), why)
    result = result_lines(
        summary, run_id=run_id, live_calls=facts.live_calls, revision=facts.revision
    )
    print_outcome(files, summary, why, run_id, result, written)
    return ExitCode.OK
