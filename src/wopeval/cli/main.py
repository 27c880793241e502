"""The Typer application: command groups registered in one place (G13).

A command's module is imported only when that command runs: `wopeval --version`
and `wopeval --help` load none of them, so neither the client, the store, the
engine nor a model SDK (docs/design.md §1). `--help` lists each command from
its `summary` here, which is the first paragraph of the command's own help
(`tests/cli/test_fast_start.py` holds the two equal).

To add a command: one `Deferred` line in `COMMANDS`, naming the command, the
`module:attribute` of its function (or of its Typer group) and that summary. A
module's `SETTINGS`, when it has one, are the keyword arguments of its
`app.command(...)`.
"""

from __future__ import annotations

import importlib
import io
import sys
from dataclasses import dataclass
from typing import Annotated, Any

import typer
import typer.main
from typer._click.core import Command as ClickCommand
from typer._click.core import Context
from typer.core import TyperCommand

from wopeval.cli._exit import Group
from wopeval.hosting.collector import paused_for_startup


@dataclass(frozen=True)
class Deferred:
    """A command registered by name, its module imported when it runs."""

    name: str
    target: str
    """`module:attribute`: the command's function, or its `typer.Typer` group."""
    summary: str
    """What `wopeval --help` lists: the first paragraph of the command's help."""

    def load(self) -> ClickCommand:
        """The command as Typer builds it, registered as main.py always registered it."""
        module_name, _, attribute = self.target.partition(":")
        with paused_for_startup():
            module = importlib.import_module(module_name)
        target = getattr(module, attribute)
        holder = typer.Typer()
        if isinstance(target, typer.Typer):
            holder.add_typer(target, name=self.name)
        else:
            holder.command(self.name, **getattr(module, "SETTINGS", {}))(target)
        return typer.main.get_group(holder).commands[self.name]


COMMANDS = (
    Deferred("serve", "wopeval.cli.serve:serve", "Start an OpenWOP v2 host on HOST:PORT."),
    Deferred(
        "worker",
        "wopeval.cli.worker:worker",
        "Execute the runs that `wopeval serve --executor queue` processes enqueue.",
    ),
    Deferred(
        "ui",
        "wopeval.cli.ui:ui",
        "Open the dashboard (runs, eval results, compare, suites) of DATA_DIR's host.",
    ),
    Deferred(
        "conformance",
        "wopeval.cli.conformance:conformance",
        "Run the conformance legs against a host; exit 0 only if none failed or was blocked.",
    ),
    Deferred(
        "purge",
        "wopeval.cli.purge:purge",
        "Erase the recorded tool content (and every copy derived from it) of expired runs.",
    ),
    Deferred(
        "demo",
        "wopeval.cli.demo:demo",
        "Record a support agent's runs, replay them to a changed agent, and show the verdict.",
    ),
    Deferred(
        "init",
        "wopeval.cli.init:init",
        "Write a working project for your own agent: wopeval.toml, agent, tools, suite, CI.",
    ),
    Deferred(
        "run",
        "wopeval.cli.run:run",
        "Create a workflow run, follow it, and print its id, status and decision.",
    ),
    Deferred(
        "eval",
        "wopeval.cli.evaluate:evaluate",
        "Evaluate an agent on a suite; with a baseline, judge it task by task against that run.",
    ),
    Deferred(
        "compare",
        "wopeval.cli.compare:compare",
        "Judge CANDIDATE_RUN against BASELINE_RUN task by task (RFC 0244 §F pairing by taskId).",
    ),
    Deferred(
        "report",
        "wopeval.cli.report:report",
        "Write the report files of RUN_ID and print its table. Exit 0 when written, 4 on error.",
    ),
    Deferred(
        "explain",
        "wopeval.cli.explain:explain",
        "Why RUN_ID's tasks failed: reason, expected/actual diff, tool trace, fixture misses.",
    ),
    Deferred(
        "annotate",
        "wopeval.cli.annotate:annotate",
        "Label RUN_ID (or its TASK_ID) pass or fail, or --list its annotations.",
    ),
    Deferred(
        "judges",
        "wopeval.cli.judges:app",
        "Calibrate a project's rubric judge against people's pass/fail labels.",
    ),
    Deferred("runs", "wopeval.cli.runs:app", "List runs, show one, or print its events."),
    Deferred(
        "suites",
        "wopeval.cli.suites:app",
        "Validate suite documents, publish them to a host, list and show them.",
    ),
    Deferred(
        "recordings",
        "wopeval.cli.recordings:app",
        "Export recorded runs from a store to a bundle, or import a bundle into another.",
    ),
)


class _Listed(TyperCommand):
    """A deferred command as `--help` lists it; run, it hands over to the loaded command.

    The group runs a subcommand as `cmd.make_context(...)` and then
    `sub_ctx.command.invoke(sub_ctx)`, so the context the loaded command makes
    is the one invoked: its own options, help and usage errors, unchanged.
    """

    def __init__(self, deferred: Deferred) -> None:
        super().__init__(deferred.name, help=deferred.summary)
        self.deferred = deferred

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: Context | None = None,
        **extra: Any,
    ) -> Context:
        return self.deferred.load().make_context(info_name, args, parent, **extra)


class _Root(Group):
    """The `wopeval` group: every command of `COMMANDS`, none of them imported yet."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        for deferred in COMMANDS:
            self.add_command(_Listed(deferred))


app = typer.Typer(
    cls=_Root,
    name="wopeval",
    help="Turn real agent runs into regression tests on an OpenWOP v2 host.",
    no_args_is_help=True,
    add_completion=False,
)


def _print_version(asked: bool) -> None:
    if asked:
        # Imported here: importlib.metadata (~20 ms) is read by `--version` alone.
        from importlib.metadata import version

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
    # A lone surrogate (an agent may decide `"\\ud800"`, and a reason quotes the decision)
    # is no UTF-8's to write: the write raised and the command crashed. It is written as
    # its escape, `\\ud800`, which inside `--json`'s strings is JSON's own for it.
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    app()
