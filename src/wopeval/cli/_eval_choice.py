"""What `wopeval eval` was asked to run: an `[[evals]]` entry of the project, overridden by
the command line, or the command line alone (docs/ci.md).

Everything here is decided before a host is reached: which suite, agent,
recordings, baseline and modes; whether the run must stay offline; what a
task whose MCP tools changed comes to; its tags and revision. The host-facing
steps (re-tenanting the recordings, picking a `latest:TAG` baseline, the
live-tool check) take this value and go on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from wopeval import client
from wopeval.cli._exit import CliError
from wopeval.cli._revision import project_revision
from wopeval.wire import errors
from wopeval.wire.eval_options import ToolsChangedPolicy
from wopeval.wire.suite import parse_suite

if TYPE_CHECKING:
    from wopeval.engine.catalog.project_file import EvalEntry


@dataclass(frozen=True)
class EvalFlags:
    """The command line as given (None: not given, so an entry's value stands)."""

    agent: str | None = None
    baseline: str | None = None
    modes: tuple[str, ...] | None = None
    trials: int | None = None
    offline: bool | None = None
    tools_changed: ToolsChangedPolicy | None = None
    fixture_runs_file: Path | None = None
    from_runs: dict[str, str] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    label: str | None = None
    judge_source: str | None = None


@dataclass(frozen=True)
class EvalChoice:
    """One eval, fully named."""

    suite_ref: str
    agent: str
    fixture_runs: dict[str, str]
    baseline: str | None
    """A run id, `latest:TAG`, or None."""
    modes: tuple[str, ...] | None
    trials: int | None
    offline: bool
    tags: tuple[str, ...]
    revision: str | None
    tools_changed: ToolsChangedPolicy = "report"
    """A task whose MCP tools changed since its recording is reported, or fails closed."""
    entry: str | None = None
    """The `[[evals]]` entry it came from."""
    suite_document: dict[str, Any] | None = None
    """A suite read from a file (`*.json`): published to the host before the run."""
    judge_source: str | None = None
    """`--judge-source`: the run whose recorded judgements answer the judge's requests."""


def choose_eval(name_or_suite: str, flags: EvalFlags, project: Path | None) -> EvalChoice:
    """The entry called `name_or_suite` in the project with `flags` laid over it; or, when
    the project declares no such entry, the suite `name_or_suite` with the flags alone."""
    entry = _entry(project, name_or_suite) if project is not None else None
    directory = _project_dir(project)
    revision = project_revision(directory, flags.label)
    if entry is None:
        if flags.agent is None:
            where = f" of {project}" if project is not None else " (no --project given)"
            raise typer.BadParameter(
                f"missing, and {name_or_suite!r} is not an [[evals]] entry{where}",
                param_hint="--agent",
            )
        file_runs = (
            client.read_fixture_map(flags.fixture_runs_file) if flags.fixture_runs_file else {}
        )
        suite_ref, document = _suite(name_or_suite, Path.cwd())
        return EvalChoice(
            suite_ref=suite_ref,
            agent=flags.agent,
            fixture_runs={**file_runs, **flags.from_runs},
            baseline=flags.baseline,
            modes=flags.modes,
            trials=flags.trials,
            offline=bool(flags.offline),
            tags=flags.tags,
            revision=revision,
            tools_changed=flags.tools_changed or "report",
            suite_document=document,
            judge_source=flags.judge_source,
        )
    if flags.fixture_runs_file is not None:
        base_runs = client.read_fixture_map(flags.fixture_runs_file)
    elif isinstance(entry.fixture_runs, str):
        base_runs = client.read_fixture_map(directory / entry.fixture_runs)
    else:
        base_runs = dict(entry.fixture_runs or {})
    try:
        entry_modes = client.parse_modes(",".join(entry.modes)) if entry.modes else None
    except ValueError as exc:
        raise CliError(f"[[evals]] {entry.name}: {exc}") from None
    suite_ref, document = _suite(entry.suite, directory)
    return EvalChoice(
        suite_ref=suite_ref,
        agent=flags.agent or entry.agent,
        fixture_runs={**base_runs, **flags.from_runs},
        baseline=flags.baseline or entry.baseline,
        modes=flags.modes or entry_modes,
        trials=flags.trials or entry.trials,
        offline=entry.offline if flags.offline is None else flags.offline,
        tags=tuple(dict.fromkeys([*entry.tags, *flags.tags])),
        revision=revision,
        tools_changed=flags.tools_changed or entry.tools_changed,
        entry=entry.name,
        suite_document=document,
        judge_source=flags.judge_source,
    )


def _suite(named: str, base: Path) -> tuple[str, dict[str, Any] | None]:
    """A suite reference as given, or, for a `*.json` path (relative to `base`), the ref
    `<suiteId>@<version>` of the valid suite it holds, with the document to publish."""
    if not named.endswith(".json"):
        return named, None
    path = base / named
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        suite = parse_suite(document)
    except (OSError, ValueError) as exc:
        raise CliError(f"{path}: {exc}") from None
    except errors.ValidationFailed as exc:
        raise CliError(f"{path} is not a valid suite: {exc}") from None
    return f"{suite.suiteId}@{suite.version}", document


def _entry(project: Path, name: str) -> EvalEntry | None:
    # Imported here: the project loader brings the tool sources (the MCP SDK among them),
    # which a command on a remote host never needs.
    from wopeval.engine.catalog.project import ProjectError, read_project_file

    try:
        declared = read_project_file(project).evals
    except ProjectError as exc:
        raise CliError(str(exc)) from None
    return next((entry for entry in declared if entry.name == name), None)


def _project_dir(project: Path | None) -> Path:
    if project is None:
        return Path.cwd()
    return project.parent if project.suffix == ".toml" else project
