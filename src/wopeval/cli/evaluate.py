"""`wopeval eval`: run a suite against an agent, follow it, judge it, write reports."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

import typer

from wopeval import client
from wopeval.cli._exit import EXIT_CODES_HELP, Command, ExitCode, exit_code_for
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
    stderr_console,
)
from wopeval.cli._outputs import (
    HtmlOption,
    JsonFileOption,
    JunitOption,
    ReportFiles,
    read_why,
    write_reports,
)
from wopeval.cli._progress import EvalProgress
from wopeval.cli._render import result_lines, task_table
from wopeval.cli._why import reason_lines

SETTINGS: dict[str, Any] = {"cls": Command, "epilog": EXIT_CODES_HELP}
"""How main.py registers the command: usage errors exit 4; the exit codes in --help."""


def evaluate(
    suite_ref: Annotated[
        str,
        typer.Argument(
            help="A fixture id, suite://<suiteId>@<version> or <suiteId>@<version>.",
            show_default=False,
        ),
    ],
    agent: Annotated[str, typer.Option("--agent", help="The agentId to evaluate.")],
    baseline: Annotated[
        str | None,
        typer.Option("--baseline", metavar="RUN_ID", help="A finished eval run to compare with."),
    ] = None,
    from_run: Annotated[
        list[str] | None,
        typer.Option(
            "--from-run",
            metavar="TASK=RUN_ID",
            help="Replay the tool calls recorded in RUN_ID as TASK's fixtures (repeatable).",
        ),
    ] = None,
    modes: Annotated[
        str | None,
        typer.Option(
            "--modes",
            metavar="M1,M2",
            help="evalModes (default: the host's own; golden,regression with --baseline).",
        ),
    ] = None,
    trials: Annotated[
        int | None,
        typer.Option(
            "--trials",
            min=1,
            max=100,
            help="Run every task N times: publishes the suite as version "
            "X.Y.(1000000+1000·Z+N) with trials N (needs the host's suite routes).",
        ),
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit 3 when the only differences are inconclusive.")
    ] = False,
    replay_model: Annotated[
        bool,
        typer.Option(
            "--replay-model",
            help="With --from-run: serve the agent's model calls from the recorded run too "
            "(the embedded host only; beyond RFC 0252, see docs/llm.md).",
        ),
    ] = False,
    junit: JunitOption = None,
    json_file: JsonFileOption = None,
    html: HtmlOption = None,
    url: UrlOption = None,
    api_key: ApiKeyOption = None,
    data_dir: DataDirOption = DEFAULT_DATA_DIR,
    project: ProjectOption = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Evaluate AGENT on SUITE_REF; with --baseline, judge it task by task against that run."""
    try:
        chosen = client.parse_modes(modes) if modes else client.default_modes(baseline)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--modes") from None
    try:
        fixture_runs = client.parse_fixture_runs(from_run or [])
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--from-run") from None
    request = client.EvalRequest(
        suite_ref=suite_ref,
        agent_id=agent,
        modes=chosen,
        baseline_run_id=baseline,
        fixture_runs=fixture_runs,
    )
    target = Target(url, api_key, data_dir, project, database_url, replay_model)
    files = ReportFiles(junit=junit, json=json_file, html=html)
    code = guarded(lambda: run_eval(target, request, trials=trials, strict=strict, files=files))
    raise typer.Exit(code)


def run_eval(
    target: Target,
    request: client.EvalRequest,
    *,
    trials: int | None,
    strict: bool,
    files: ReportFiles,
) -> ExitCode:
    """Create the run, show progress, print the verdict, write reports; return the exit code."""
    err, out = stderr_console(), files.console()
    with connect(target) as host:
        client.require_eval_capabilities(host, request)
        if trials is not None:
            request = replace(
                request, suite_ref=client.publish_trials_variant(host, request.suite_ref, trials)
            )
            err.print(f"Suite with {trials} trials per task: {request.suite_ref}", highlight=False)
        total = client.planned_trials(host, request.suite_ref)
        run_id = str(host.create_run(request.body())["runId"])
        err.print(f"Eval run {run_id}", highlight=False)
        with EvalProgress(err, request.agent_id, total) as bar:
            watch = client.follow(host, run_id, agent_id=request.agent_id, on_update=bar.update)
        client.require_completed(host, watch)
        summary = client.ensure_verdict(host, client.fetch_summary(host, run_id))
        facts = client.run_facts(host, run_id)
        why = read_why(host, run_id, summary, files)
    code = exit_code_for(summary, strict=strict)
    written = write_reports(files, summary, facts, code, why)
    out.print(task_table(summary))
    if why is not None and (reasons := reason_lines(summary, why, run_id)) is not None:
        out.print(reasons)
    out.print(result_lines(summary, run_id=run_id, live_calls=facts.live_calls, exit_code=code))
    for kind, path in written:
        out.print(f"{kind}: {path}", highlight=False)
    return code
