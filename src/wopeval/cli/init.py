"""`wopeval init`: write a working project for your own agent into a directory.

It asks (or takes flags for) the agent's kind and its tools, and writes
`wopeval.toml`, the agent, a workflow, a one-task suite, an `[[evals]]` entry and
the CI workflow, each with comments saying what to change. Right after it,
`wopeval run`, `suites from-runs` and `wopeval eval --offline` work as they are
(docs/own-agent.md walks through them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.prompt import Prompt

from wopeval.cli._options import fail
from wopeval.cli._scaffold import FRAMEWORKS, KINDS, TOOLS, Choices, ScaffoldError, render


def _asked(value: str | None, question: str, choices: dict[str, str]) -> str:
    """The flag's value, or the user's answer to `question` among `choices`."""
    if value is not None:
        return value
    for name, meaning in choices.items():
        typer.echo(f"  {name:<14} {meaning}")
    try:
        return Prompt.ask(question, choices=list(choices), default=next(iter(choices)))
    except EOFError:  # no terminal to ask (a script, CI): say which flag answers it
        fail(f"{question}: no answer on stdin; give it as a flag ({', '.join(choices)})")


def init(
    directory: Annotated[
        Path, typer.Argument(help="Where to write the project (created if missing).")
    ] = Path("."),
    kind: Annotated[
        str | None,
        typer.Option(help=f"The agent's kind: {', '.join(KINDS)} (asked when not given)."),
    ] = None,
    framework: Annotated[
        str | None,
        typer.Option(help=f"An llm agent's framework: {', '.join(FRAMEWORKS)}."),
    ] = None,
    tool: Annotated[
        str | None,
        typer.Option(help=f"The agent's tools: {', '.join(TOOLS)} (asked when not given)."),
    ] = None,
    agent_port: Annotated[
        int, typer.Option(min=1, max=65535, help="An http agent's service port.")
    ] = 8800,
    tool_port: Annotated[
        int, typer.Option(min=1, max=65535, help="An http tool's service port.")
    ] = 8801,
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite files that already exist.")
    ] = False,
) -> None:
    """Write a working project for your own agent: wopeval.toml, agent, tools, suite, CI.

    Asks for the agent's kind (python, command, llm on a framework, http) and its
    tools (python, http, mcp) unless given as flags. Refuses to overwrite a file
    unless --force.
    """
    kind = _asked(kind, "The agent's kind", KINDS)
    if kind == "llm":
        framework = _asked(
            framework, "Its framework", {n: t for n, (t, _, _) in FRAMEWORKS.items()}
        )
    tool = _asked(tool, "Its tools", TOOLS)
    choices = Choices(kind, tool, framework, agent_port, tool_port)
    try:
        files = render(choices)
    except ScaffoldError as refused:
        fail(str(refused))
    existing = sorted(path for path in files if (directory / path).exists())
    if existing and not force:
        fail(f"{directory} already has {', '.join(existing)}; nothing was written (--force "
             "overwrites them)")  # fmt: skip
    for path, text in files.items():
        target = directory / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        typer.echo(f"wrote {target}")
    if package := choices.agent_package:
        # Not a dependency of wopeval: without it the first run fails in the agent's import.
        typer.echo(
            f"agent.py needs {package}, which wopeval does not install: "
            f'pip install "{package}" into the environment whose python runs it.'
        )
    typer.echo(
        f"Next: cd {directory} and follow docs/own-agent.md (wopeval.toml says what to run)."
    )
