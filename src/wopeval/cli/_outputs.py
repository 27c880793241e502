"""Report files a command was asked for: JUnit XML, JSON and HTML of one judged run."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from wopeval.cli._exit import ExitCode
from wopeval.reports import RunFacts, html_report, junit_xml
from wopeval.wire.summary import EvalSummary

JunitOption = Annotated[
    Path | None,
    typer.Option(
        "--junit",
        metavar="FILE",
        help="Write JUnit XML (one testcase per task).",
        rich_help_panel="Reports",
    ),
]
JsonFileOption = Annotated[
    Path | None,
    typer.Option(
        "--json",
        metavar="FILE",
        help="Write the summary and exit code as JSON.",
        rich_help_panel="Reports",
    ),
]
HtmlOption = Annotated[
    Path | None,
    typer.Option(
        "--html",
        metavar="FILE",
        help="Write a self-contained HTML report.",
        rich_help_panel="Reports",
    ),
]


@dataclass(frozen=True)
class ReportFiles:
    junit: Path | None = None
    json: Path | None = None
    html: Path | None = None

    def requested(self) -> bool:
        return any((self.junit, self.json, self.html))


def write_reports(
    files: ReportFiles, summary: EvalSummary, facts: RunFacts, exit_code: ExitCode | None
) -> list[tuple[str, Path]]:
    """Write each requested file; returns `(kind, path)` for the lines the command prints."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    written: list[tuple[str, Path]] = []
    if files.junit is not None:
        _write(files.junit, junit_xml(summary, run_id=facts.run_id, timestamp=now))
        written.append(("JUnit", files.junit))
    if files.json is not None:
        document = {
            "runId": facts.run_id,
            "exitCode": int(exit_code) if exit_code is not None else None,
            "liveCalls": facts.live_calls,
            "summary": summary.to_wire(),
        }
        _write(files.json, json.dumps(document, indent=2) + "\n")
        written.append(("JSON", files.json))
    if files.html is not None:
        _write(files.html, html_report(summary, facts, generated_at=now))
        written.append(("HTML report", files.html))
    return written


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
