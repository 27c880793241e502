"""`wopeval suites validate|push|list|show|from-runs`: suite documents, checked here, published
to a host, or made from recorded runs.

`validate` needs no host: it runs the host's own parser (`parse_suite`) and
prints each problem with its JSON pointer (`tasks[2].fixtures.toolResponses[0]
.argsMatch: ...`). Given `--project`, it also refuses `custom` matches naming a
grader that project does not declare, as the host would. Exit 0 when every
file is valid, 1 when one is not, 4 when a file or the project cannot be read.

`from-runs` turns completed workflow runs into a suite, one task per run, and
writes beside it the `{taskId: runId}` map `wopeval eval --fixture-runs` takes,
so each task replays the tool calls of the run it was made from
(docs/recordings.md). Exit 0 when both files are written, 4 otherwise.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, cast

import typer
from rich.console import Group as RichGroup
from rich.console import RenderableType
from rich.text import Text

from wopeval import client, evals
from wopeval.cli._exit import CliError, Group
from wopeval.cli._options import (
    DEFAULT_DATA_DIR,
    ApiKeyOption,
    DatabaseUrlOption,
    DataDirOption,
    ProjectOption,
    Target,
    UrlOption,
    connect,
    emit,
    guarded,
    stderr_console,
)
from wopeval.cli._render import suites_table
from wopeval.cli.runs import parse_since
from wopeval.wire import errors
from wopeval.wire.json_text import JsonObject
from wopeval.wire.suite import parse_suite

app = typer.Typer(
    cls=Group,
    name="suites",
    help="Validate suite documents, publish them to a host, list and show them.",
    no_args_is_help=True,
    add_completion=False,
)

FilesArgument = Annotated[
    list[Path], typer.Argument(help="Suite documents (JSON).", show_default=False)
]
INVALID = 1
"""`validate`'s exit code when a document is not a valid suite."""
JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


@dataclass(frozen=True)
class FileCheck:
    """One file's verdict: the suite it holds, or the problems with their pointers."""

    path: Path
    suite_id: str | None = None
    version: str | None = None
    task_count: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.problems

    def to_json(self) -> JsonObject:
        return {
            "file": str(self.path),
            "valid": self.valid,
            "suiteId": self.suite_id,
            "version": self.version,
            "taskCount": self.task_count,
            "errors": list(self.problems),
        }


def read_document(path: Path) -> Any:
    """The file's JSON value; `CliError` when it cannot be read, ValueError when not JSON."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    return json.loads(text)


def check_suite_file(path: Path, graders: Collection[str] | None = None) -> FileCheck:
    """Parse one file as a suite, with the same rules the host applies on PUT and createRun.

    `graders`, when given, are the custom graders the host would have.
    """
    try:
        document = read_document(path)
    except json.JSONDecodeError as exc:
        return FileCheck(path, problems=[f"(json) line {exc.lineno} column {exc.colno}: {exc.msg}"])
    try:
        suite = parse_suite(document)
        if graders is not None:
            evals.check_known_graders(suite, graders)
    except errors.ValidationFailed as exc:
        return FileCheck(path, problems=exc.message.split("; "))
    return FileCheck(path, suite.suiteId, suite.version, len(suite.tasks))


def project_graders(directory: Path) -> list[str]:
    """The grader ids a project's `wopeval.toml` declares (nothing is imported)."""
    # Imported here: the project loader brings the tool sources (the MCP SDK among
    # them), seconds of start-up that every other command would pay.
    from wopeval.engine.catalog.project import ProjectError, read_project_file

    try:
        return [grader.id for grader in read_project_file(directory).graders]
    except ProjectError as exc:
        raise CliError(str(exc)) from None


def check_lines(checks: list[FileCheck]) -> RenderableType:
    lines: list[RenderableType] = []
    for check in checks:
        if check.valid:
            lines.append(
                Text.assemble(
                    ("valid   ", "bold green"),
                    f"{check.path}: {check.suite_id}@{check.version} ({check.task_count} tasks)",
                )
            )
            continue
        lines.append(Text.assemble(("invalid ", "bold red"), str(check.path)))
        lines.extend(Text(f"    {problem}") for problem in check.problems)
    return RichGroup(*lines)


@app.command("validate")
def validate(
    files: FilesArgument, as_json: JsonFlag = False, project: ProjectOption = None
) -> None:
    """Check suite documents locally. Exit 0 all valid, 1 any invalid, 4 unreadable file."""

    def body() -> int:
        graders = project_graders(project) if project is not None else None
        checks = [check_suite_file(path, graders) for path in files]
        emit([c.to_json() for c in checks], as_json, lambda: check_lines(checks))
        return 0 if all(c.valid for c in checks) else INVALID

    raise typer.Exit(guarded(body))


@app.command("push")
def push(
    files: FilesArgument,
    as_json: JsonFlag = False,
    url: UrlOption = None,
    api_key: ApiKeyOption = None,
    data_dir: DataDirOption = DEFAULT_DATA_DIR,
    project: ProjectOption = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Publish suite versions to the host (PUT /host/wopeval/suites); a version is immutable."""
    target = Target(url, api_key, data_dir, project, database_url, reads_only=True)

    def body() -> None:
        documents = [(path, _json_document(path)) for path in files]
        results: list[JsonObject] = []
        with connect(target) as host:
            for path, document in documents:
                created, listing = host.put_suite(document)
                results.append({"file": str(path), "created": created, **listing.document()})
        emit(results, as_json, lambda: _pushed_lines(results))

    guarded(body)


def _json_document(path: Path) -> Any:
    try:
        return read_document(path)
    except json.JSONDecodeError as exc:
        raise CliError(
            f"{path} is not JSON: line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None


def _pushed_lines(results: list[JsonObject]) -> RenderableType:
    return RichGroup(
        *(
            Text.assemble(
                ("created   " if r["created"] else "unchanged ", "bold"),
                f"{r['suiteId']}@{r['version']} ({r['file']})",
            )
            for r in results
        )
    )


@app.command("list")
def list_suites(
    as_json: JsonFlag = False,
    url: UrlOption = None,
    api_key: ApiKeyOption = None,
    data_dir: DataDirOption = DEFAULT_DATA_DIR,
    project: ProjectOption = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """The suites the host holds for you: your own, then the host's."""
    target = Target(url, api_key, data_dir, project, database_url, reads_only=True)

    def body() -> None:
        with connect(target) as host:
            listing = host.list_suites()
        if listing is None:
            raise CliError("this host does not serve GET /host/wopeval/suites")
        emit(listing.document(), as_json, lambda: suites_table(listing.suites))

    guarded(body)


@app.command("show")
def show(
    ref: Annotated[str, typer.Argument(show_default=False)],
    url: UrlOption = None,
    api_key: ApiKeyOption = None,
    data_dir: DataDirOption = DEFAULT_DATA_DIR,
    project: ProjectOption = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Print one suite document (JSON) by fixture id or <suiteId>@<version>."""
    target = Target(url, api_key, data_dir, project, database_url, reads_only=True)

    def body() -> None:
        with connect(target) as host:
            document = host.get_suite(ref)
        if document is None:
            raise CliError(f"the host holds no suite {ref!r}")
        typer.echo(json.dumps(document, indent=2, ensure_ascii=False))

    guarded(body)


@app.command("from-runs")
def from_runs(
    suite_id: Annotated[
        str, typer.Option("--suite-id", help="The suiteId, e.g. acme.support.evals.prod.")
    ],
    version: Annotated[str, typer.Option("--version", help="The suite version (X.Y.Z).")],
    agent: Annotated[
        str, typer.Option("--agent", help="The agent the runs invoked and the suite targets.")
    ],
    run_ids: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="RUN_ID",
            help="Workflow runs to make tasks of (or --tag).",
            show_default=False,
        ),
    ] = None,
    tag: Annotated[
        str | None, typer.Option("--tag", help="Every completed workflow run carrying this tag.")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", help="With --tag: only runs created since (ISO, or 24h, 7d)."),
    ] = None,
    expect: Annotated[
        str,
        typer.Option(
            "--expect",
            help="auto: json-match for a JSON object or array decision (a failure names each "
            "differing path), exact for text; exact: the recorded decision, stringified; "
            "json-match: equal as JSON; json-subset: at least its members; none: any decision "
            "passes (the tool calls are still replayed).",
        ),
    ] = "auto",
    task_id_from: Annotated[
        str | None,
        typer.Option(
            "--task-id-from",
            metavar="tag:PREFIX|input:PATH",
            help="Task ids from a tag's remainder or a dotted path into the inputs "
            "(default: run-<first 12 characters of the run id>).",
        ),
    ] = None,
    include_idle: Annotated[
        bool,
        typer.Option(
            "--include-idle",
            help="Also make tasks of idle runs, whose agent made no tool call (or no model "
            "call though it was handed the model proxy); by default they are skipped.",
        ),
    ] = False,
    output: Annotated[
        Path,
        typer.Option(
            "-o", "--output", help="The suite to write; the map goes to <stem>.fixture-runs.json."
        ),
    ] = Path("suite.json"),
    as_json: JsonFlag = False,
    url: UrlOption = None,
    api_key: ApiKeyOption = None,
    data_dir: DataDirOption = DEFAULT_DATA_DIR,
    project: ProjectOption = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Write a suite with one task per recorded run, and the fixture-runs map that replays it."""
    target = Target(url, api_key, data_dir, project, database_url, reads_only=True)
    if bool(run_ids) == (tag is not None):
        raise typer.BadParameter("name runs by RUN_ID … or by --tag, not both", param_hint="--tag")
    if since is not None and tag is None:
        raise typer.BadParameter("only with --tag", param_hint="--since")
    if expect not in client.EXPECT_STRATEGIES:
        raise typer.BadParameter(
            f"one of {', '.join(client.EXPECT_STRATEGIES)}", param_hint="--expect"
        )
    try:
        task_ids = client.TaskIdRule.parse(task_id_from)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--task-id-from") from None
    after = parse_since(since) if since is not None else None
    map_path = output.with_name(f"{output.stem}.fixture-runs.json")

    def body() -> None:
        with connect(target) as host:
            if tag is not None:
                runs = client.runs_by_tag(
                    host, tag, agent, created_after=after, notify=_note, include_idle=include_idle
                )
            else:
                runs = client.runs_by_id(
                    host, run_ids or [], agent, include_idle=include_idle, notify=_note
                )
        made = client.build_suite(
            runs,
            suite_id=suite_id,
            version=version,
            agent_id=agent,
            expect=cast(client.ExpectStrategy, expect),
            task_ids=task_ids,
        )
        _write_atomically({output: made.suite.to_document(), map_path: made.fixture_runs})
        written: JsonObject = {
            "suite": str(output),
            "fixtureRuns": str(map_path),
            "suiteId": made.suite.suiteId,
            "version": made.suite.version,
            "taskCount": len(made.suite.tasks),
            "tasks": dict(made.fixture_runs),
        }
        emit(written, as_json, lambda: _written_lines(written))

    guarded(body)


def _note(message: str) -> None:
    stderr_console().print(f"note: {message}", highlight=False, markup=False)


def _write_atomically(documents: dict[Path, Any]) -> None:
    """Each document as JSON into its file; a reader sees every file whole, old or new."""
    drafts = {path: path.with_name(f".{path.name}.{os.getpid()}") for path in documents}
    try:
        for path, document in documents.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
            drafts[path].write_text(text, encoding="utf-8")
        for path, draft in drafts.items():
            os.replace(draft, path)
    finally:
        for draft in drafts.values():
            draft.unlink(missing_ok=True)


def _written_lines(written: JsonObject) -> RenderableType:
    return RichGroup(
        Text(f"suite         {written['suite']} ({written['suiteId']}@{written['version']})"),
        Text(f"fixture runs  {written['fixtureRuns']}"),
        Text(f"tasks         {written['taskCount']}"),
    )
