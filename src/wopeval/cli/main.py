"""The Typer application: command groups registered in one place (G13)."""

from __future__ import annotations

import typer

from wopeval.cli.conformance import conformance
from wopeval.cli.purge import purge
from wopeval.cli.serve import serve

app = typer.Typer(
    name="wopeval",
    help="Turn real agent runs into regression tests on an OpenWOP v2 host.",
    no_args_is_help=True,
    add_completion=False,
)
app.command("serve")(serve)
app.command("conformance")(conformance)
app.command("purge")(purge)


@app.callback()
def _root() -> None:
    """Turn real agent runs into regression tests on an OpenWOP v2 host."""


def main() -> None:
    app()
