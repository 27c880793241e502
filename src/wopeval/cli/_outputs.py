"""Report files a command was asked for: JUnit XML, JSON, HTML and Markdown of one judged run.

`--json -` (or `--markdown -`) writes that document to stdout; the command then
prints its table and lines to stderr, so stdout holds the document alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console, RenderableType

from wopeval import client, reports
from wopeval.cli._exit import ExitCode
from wopeval.cli._options import stderr_console, stdout_console
from wopeval.cli._render import task_table
from wopeval.cli._why import reason_lines
from wopeval.reports import RunFacts, RunWhy, html_report, junit_xml, markdown_report
from wopeval.wire.summary import EvalSummary

STDOUT = Path("-")

JunitOption = Annotated[
    Path | None,
    typer.Option(
        "--junit",
        metavar="FILE",
        help="Write JUnit XML (one testcase per task, failures with their reason).",
        rich_help_panel="Reports",
    ),
]
JsonFileOption = Annotated[
    Path | None,
    typer.Option(
        "--json",
        metavar="FILE",
        help="Write the summary, task reasons and exit code as JSON (`-`: to stdout).",
        rich_help_panel="Reports",
    ),
]
HtmlOption = Annotated[
    Path | None,
    typer.Option(
        "--html",
        metavar="FILE",
        help="Write a self-contained HTML report (with a drill-down per task).",
        rich_help_panel="Reports",
    ),
]

MarkdownOption = Annotated[
    Path | None,
    typer.Option(
        "--markdown",
        metavar="FILE",
        help="Write a pull request summary in GitHub Markdown (`-`: to stdout; "
        'e.g. "$GITHUB_STEP_SUMMARY").',
        rich_help_panel="Reports",
    ),
]


@dataclass(frozen=True)
class ReportFiles:
    junit: Path | None = None
    json: Path | None = None
    html: Path | None = None
    markdown: Path | None = None

    def __post_init__(self) -> None:
        if self.json == STDOUT and self.markdown == STDOUT:
            raise typer.BadParameter("only one of --json and --markdown can write to stdout")

    def requested(self) -> bool:
        return any((self.junit, self.json, self.html, self.markdown))

    @property
    def to_stdout(self) -> bool:
        return STDOUT in (self.json, self.markdown)

    def console(self) -> Console:
        """Where the command prints its table: stderr when stdout carries a document."""
        return stderr_console() if self.to_stdout else stdout_console()


def read_why(
    host: client.WireClient, run_id: str, summary: EvalSummary, files: ReportFiles
) -> RunWhy | None:
    """The host's task lines, and the details the requested reports show: every task's for
    HTML, the failing ones' for JUnit. None (with a note) when they cannot be read: the
    verdict stands without them."""
    try:
        why = client.fetch_why(host, run_id)
        if why is None:
            return None
        if files.html is not None:
            wanted = [line.taskId for line in why.listing.tasks]
        elif files.junit is not None:
            wanted = reports.explained_task_ids(summary, why.listing)
        else:
            wanted = []
        return client.with_details(host, why, wanted)
    except client.ClientError as exc:
        typer.echo(f"wopeval: the task details could not be read ({exc})", err=True)
        return None


def write_reports(
    files: ReportFiles,
    summary: EvalSummary,
    facts: RunFacts,
    exit_code: ExitCode | None,
    why: RunWhy | None = None,
) -> list[tuple[str, Path]]:
    """Write each requested file; returns `(kind, path)` for the lines the command prints."""
    now = datetime.now(UTC).replace(microsecond=0)
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    written: list[tuple[str, Path]] = []
    if files.junit is not None:
        _write(
            files.junit,
            junit_xml(
                summary, run_id=facts.run_id, timestamp=stamp, why=why, revision=facts.revision
            ),
        )
        written.append(("JUnit", files.junit))
    if files.json is not None:
        document: dict[str, Any] = {
            "runId": facts.run_id,
            "exitCode": int(exit_code) if exit_code is not None else None,
            "liveCalls": facts.live_calls,
            "summary": summary.to_wire(),
        }
        if why is not None:
            document["tasks"] = why.listing.model_dump(mode="json", exclude_none=True)["tasks"]
        written += _deliver(files.json, json.dumps(document, indent=2) + "\n", "JSON")
    if files.html is not None:
        _write(files.html, html_report(summary, facts, generated_at=stamp, why=why))
        written.append(("HTML report", files.html))
    if files.markdown is not None:
        code = int(exit_code) if exit_code is not None else None
        text = markdown_report(summary, facts, exit_code=code, why=why, now=now) + "\n"
        written += _deliver(files.markdown, text, "Markdown")
    return written


def print_outcome(
    files: ReportFiles,
    summary: EvalSummary,
    why: RunWhy | None,
    run_id: str,
    result: RenderableType,
    written: list[tuple[str, Path]],
) -> None:
    """The task table, the failing tasks' reasons, the result lines, the files written."""
    out = files.console()
    out.print(task_table(summary))
    if why is not None and (reasons := reason_lines(summary, why, run_id)) is not None:
        out.print(reasons)
    out.print(result)
    for kind, path in written:
        out.print(f"{kind}: {path}", highlight=False)


def _deliver(path: Path, text: str, kind: str) -> list[tuple[str, Path]]:
    """`text` to stdout for `-` (nothing to list), else into `path`."""
    if path == STDOUT:
        typer.echo(text, nl=False)
        return []
    _write(path, text)
    return [(kind, path)]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
