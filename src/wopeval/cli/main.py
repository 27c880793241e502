"""The Typer application: command groups registered in one place (G13)."""

from __future__ import annotations

from importlib.metadata import version
from typing import Annotated

import typer

import wopeval.cli.annotate as annotate
import wopeval.cli.compare as compare
import wopeval.cli.demo as demo
import wopeval.cli.evaluate as evaluate
import wopeval.cli.explain as explain
import wopeval.cli.recordings as recordings
import wopeval.cli.report as report
import wopeval.cli.run as run
import wopeval.cli.runs as runs
import wopeval.cli.suites as suites
from wopeval.cli._exit import Group
from wopeval.cli.conformance import conformance
from wopeval.cli.purge import purge
from wopeval.cli.serve import serve
from wopeval.cli.ui import ui
from wopeval.cli.worker import worker

app = typer.Typer(
    cls=Group,
    name="wopeval",
    help="Turn real agent runs into regression tests on an OpenWOP v2 host.",
    no_args_is_help=True,
    add_completion=False,
)
app.command("serve")(serve)
app.command("worker")(worker)
app.command("ui")(ui)
app.command("conformance")(conformance)
app.command("purge")(purge)
app.command("demo", **demo.SETTINGS)(demo.demo)
app.command("run", **run.SETTINGS)(run.run)
app.command("eval", **evaluate.SETTINGS)(evaluate.evaluate)
app.command("compare", **compare.SETTINGS)(compare.compare)
app.command("report", **report.SETTINGS)(report.report)
app.command("explain", **explain.SETTINGS)(explain.explain)
app.command("annotate", **annotate.SETTINGS)(annotate.annotate)
app.add_typer(runs.app, name="runs")
app.add_typer(suites.app, name="suites")
app.add_typer(recordings.app, name="recordings")


def _print_version(asked: bool) -> None:
    if asked:
        typer.echo(f"wopeval {version('wopeval')}")
        raise typer.Exit()


@app.callback()
def _root(
    _version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the installed version and exit.",
        ),
    ] = False,
) -> None:
    """Turn real agent runs into regression tests on an OpenWOP v2 host."""


def main() -> None:
    app()
