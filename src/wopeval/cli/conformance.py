"""`wopeval conformance`: run the RFC 0251 / RFC 0252 legs against any OpenWOP v2 host.

A thin shell (G13): parse, call `run_conformance`, render, and pick the exit
code from the report (0 only when nothing failed and nothing was blocked).
The options bind to the official conformance suite's variables, so the same
shell environment drives both.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from wopeval.conformance.results import Disposition, Report
from wopeval.conformance.runner import leg_ids, run_conformance, selected
from wopeval.conformance.session import Target

_STYLES = {
    Disposition.EXECUTED_PASS: "green",
    Disposition.EXECUTED_FAIL: "bold red",
    Disposition.SKIPPED: "yellow",
    Disposition.BLOCKED: "magenta",
}


def render_table(report: Report) -> Table:
    table = Table(title=f"OpenWOP conformance — {report.host}", show_lines=False, expand=True)
    table.add_column("id", no_wrap=True)
    table.add_column("disposition", no_wrap=True)
    table.add_column("detail", overflow="fold", ratio=1)
    for result in report.results:
        # The report keeps full ids; the terminal drops the common prefix to leave room for detail.
        short = result.id.removeprefix("openwop.requirement.").removeprefix("openwop.")
        passed = result.disposition is Disposition.EXECUTED_PASS
        table.add_row(
            short,
            Text(result.disposition.value, _STYLES[result.disposition]),
            Text(result.detail, "dim" if passed else ""),
        )
    return table


def render_totals(report: Report) -> Text:
    counts = Counter(result.disposition for result in report.results)
    parts = [Text(f"{counts[d]} {d.value}", _STYLES[d]) for d in Disposition if counts[d]]
    return Text(f"suite {report.suite_version}, started {report.started_at}: ") + Text(", ").join(
        parts
    )


def conformance(
    base_url: Annotated[
        str | None, typer.Option(envvar="OPENWOP_BASE_URL", help="Origin of the host under test.")
    ] = None,
    api_key: Annotated[
        str | None, typer.Option(envvar="OPENWOP_API_KEY", help="Tenant A's API key.")
    ] = None,
    tenant_b_api_key: Annotated[
        str | None,
        typer.Option(
            envvar="OPENWOP_TEST_TENANT_B_API_KEY",
            help="A key of a DIFFERENT tenant; without it the cross-tenant legs are blocked.",
        ),
    ] = None,
    report: Annotated[Path | None, typer.Option(help="Write the JSON report to this file.")] = None,
    only: Annotated[
        list[str] | None,
        typer.Option(help="Run only legs whose id matches this fnmatch pattern (repeatable)."),
    ] = None,
    agent_id: Annotated[
        str, typer.Option(help="The agent the eval fixtures target.")
    ] = "conformance.scripted-agent",
    timeout: Annotated[
        float, typer.Option(min=1.0, help="Seconds each run may take to finish.")
    ] = 60.0,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the JSON report instead of the table.")
    ] = False,
    list_legs: Annotated[
        bool, typer.Option("--list", help="List the leg ids (after --only) and exit.")
    ] = False,
) -> None:
    """Run the conformance legs against a host; exit 0 only if none failed or was blocked."""
    patterns = only or []
    if list_legs:
        chosen = selected(patterns)
        typer.echo("\n".join(i for i in leg_ids() if i in chosen))
        return
    if not base_url:
        raise typer.BadParameter("is required (or OPENWOP_BASE_URL)", param_hint="--base-url")
    if not api_key:
        raise typer.BadParameter("is required (or OPENWOP_API_KEY)", param_hint="--api-key")
    if patterns and not selected(patterns):
        raise typer.BadParameter("matches no leg id (see --list)", param_hint="--only")
    target = Target(base_url, api_key, tenant_b_api_key or None, agent_id, timeout)
    console = Console(stderr=json_output)
    with console.status("running conformance legs…") as status:
        result = run_conformance(
            target, only=patterns, on_result=lambda r: status.update(f"{r.id}: {r.disposition}")
        )
    document = json.dumps(result.to_json(), indent=2) + "\n"
    if report is not None:
        report.write_text(document, encoding="utf-8")
    if json_output:
        typer.echo(document, nl=False)
    else:
        console.print(render_table(result))
        console.print(render_totals(result))
    raise typer.Exit(0 if result.ok else 1)
