"""`wopeval eval`: run a suite against an agent, follow it, judge it, write reports.

`wopeval eval NAME` runs the project's `[[evals]]` entry NAME (flags override
its members); `wopeval eval SUITE --agent A` names everything on the command
line. Before a run is created the CLI re-tenants the recordings, picks a
`latest:TAG` baseline, and checks which tasks could reach a live tool:
`--offline` refuses to start when any could (docs/ci.md).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from wopeval import client, evals
from wopeval.cli._auto_trials import DEFAULT_BUDGET, add_trials, rejudged
from wopeval.cli._eval_choice import EvalChoice, EvalFlags, choose_eval
from wopeval.cli._exit import EXIT_CODES_HELP, CliError, Command, ExitCode, exit_code_for
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
    MarkdownOption,
    ReportFiles,
    print_outcome,
    read_why,
    write_reports,
)
from wopeval.cli._progress import EvalProgress
from wopeval.cli._render import result_lines
from wopeval.wire.eval_options import ToolsChangedPolicy
from wopeval.wire.suite import Suite

SETTINGS: dict[str, Any] = {"cls": Command, "epilog": EXIT_CODES_HELP}
"""How main.py registers the command: usage errors exit 4; the exit codes in --help."""


def evaluate(
    name_or_suite: Annotated[
        str,
        typer.Argument(
            metavar="NAME|SUITE_REF",
            help="An [[evals]] entry of the project, or a suite: a fixture id, "
            "suite://<suiteId>@<version>, <suiteId>@<version>, or a suite file (*.json, "
            "published to the host first).",
            show_default=False,
        ),
    ],
    agent: Annotated[
        str | None,
        typer.Option("--agent", help="The agentId to evaluate (an entry names its own)."),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            metavar="RUN_ID|latest:TAG",
            help="A finished eval run to compare with, or the newest completed one of this "
            "suite and agent tagged TAG.",
        ),
    ] = None,
    from_run: Annotated[
        list[str] | None,
        typer.Option(
            "--from-run",
            metavar="TASK=RUN_ID",
            help="Replay the tool calls recorded in RUN_ID as TASK's fixtures (repeatable).",
        ),
    ] = None,
    fixture_runs: Annotated[
        Path | None,
        typer.Option(
            "--fixture-runs",
            metavar="FILE",
            help="A {taskId: runId} JSON map (as `suites from-runs` writes); --from-run "
            "overrides its tasks. Run ids are taken under the caller's tenant.",
        ),
    ] = None,
    offline: Annotated[
        bool | None,
        typer.Option(
            "--offline/--no-offline",
            help="--offline: refuse to start when a task could reach a live tool, and run "
            "the embedded host with live tools disabled.",
            show_default=False,
        ),
    ] = None,
    tools_changed: Annotated[
        ToolsChangedPolicy | None,
        typer.Option(
            "--tools-changed",
            help="A task whose MCP tools changed since its recording: report it (the "
            "default), or fail it without running it (the embedded host only).",
            show_default=False,
        ),
    ] = None,
    tag: Annotated[
        list[str] | None,
        typer.Option("--tag", help="A tag the eval run carries (repeatable), e.g. main."),
    ] = None,
    label: Annotated[
        str | None,
        typer.Option(
            "--label",
            help="The revision to record (default: the project's git commit).",
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
        str | None,
        typer.Option(
            "--trials",
            metavar="N|auto",
            help="Run every task N times (1-100): publishes the suite as version "
            "X.Y.(1000000+1000·Z+N) with trials N (needs the host's suite routes). "
            "auto: run the suite as it is, then add trials to exactly the tasks whose "
            "verdict against the baseline is inconclusive, within --trials-budget, and "
            "judge all their trials together.",
            show_default=False,
        ),
    ] = None,
    trials_budget: Annotated[
        int | None,
        typer.Option(
            "--trials-budget",
            min=0,
            help=f"With --trials auto: extra trials over all tasks at most "
            f"[default: {DEFAULT_BUDGET}].",
            show_default=False,
        ),
    ] = None,
    judge_source: Annotated[
        str | None,
        typer.Option(
            "--judge-source",
            metavar="RUN_ID",
            help="A run whose recorded judgements answer a rubric judge's identical requests "
            "(default: the baseline); see docs/graders.md.",
        ),
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit 3 when the only differences are inconclusive.")
    ] = False,
    replay_model: Annotated[
        bool,
        typer.Option(
            "--replay-model",
            help="With recorded runs: serve the agent's model calls from them too "
            "(the embedded host only; beyond RFC 0252, see docs/llm.md).",
        ),
    ] = False,
    junit: JunitOption = None,
    json_file: JsonFileOption = None,
    html: HtmlOption = None,
    markdown: MarkdownOption = None,
    url: UrlOption = None,
    api_key: ApiKeyOption = None,
    data_dir: DataDirOption = DEFAULT_DATA_DIR,
    project: ProjectOption = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Evaluate an agent on a suite; with a baseline, judge it task by task against that run."""
    try:
        chosen_modes = client.parse_modes(modes) if modes else None
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--modes") from None
    try:
        pairs = client.parse_fixture_runs(from_run or [])
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--from-run") from None
    fixed_trials, budget = _trials(trials, trials_budget)
    flags = EvalFlags(
        agent=agent,
        baseline=baseline,
        modes=chosen_modes,
        trials=fixed_trials,
        offline=offline,
        tools_changed=tools_changed,
        fixture_runs_file=fixture_runs,
        from_runs=pairs,
        tags=tuple(tag or ()),
        label=label,
        judge_source=judge_source,
    )
    files = ReportFiles(junit=junit, json=json_file, html=html, markdown=markdown)

    def execute() -> ExitCode:
        choice = choose_eval(name_or_suite, flags, project)
        target = Target(
            url,
            api_key,
            data_dir,
            project,
            database_url,
            replay_model,
            offline=choice.offline,
            tools_changed=choice.tools_changed,
        )
        return run_eval(target, choice, strict=strict, files=files, auto_budget=budget)

    raise typer.Exit(guarded(execute))


def _trials(text: str | None, budget: int | None) -> tuple[int | None, int | None]:
    """`--trials N|auto` and `--trials-budget`: (N, None), or (None, the budget) for auto."""
    if text == "auto":
        return None, DEFAULT_BUDGET if budget is None else budget
    if budget is not None:
        raise typer.BadParameter("only with --trials auto", param_hint="--trials-budget")
    if text is None:
        return None, None
    if not text.isdigit() or not 1 <= int(text) <= 100:
        raise typer.BadParameter(f"must be 1-100 or auto, got {text!r}", param_hint="--trials")
    return int(text), None


def run_eval(
    target: Target,
    choice: EvalChoice,
    *,
    strict: bool,
    files: ReportFiles,
    auto_budget: int | None = None,
) -> ExitCode:
    """Create the run, show progress, print the verdict, write reports; return the exit code.

    `auto_budget`: `--trials auto` with that many extra trials at most (`_auto_trials.py`)."""
    err = stderr_console()
    with connect(target) as host:
        # What the host must support is known from the choice alone: check it before
        # anything else is read or written (a refusal leaves the host untouched).
        draft = client.EvalRequest(
            suite_ref=choice.suite_ref,
            agent_id=choice.agent,
            modes=choice.modes or client.default_modes(choice.baseline),
            baseline_run_id=choice.baseline,
            fixture_runs=choice.fixture_runs,
            tags=choice.tags,
            revision=choice.revision,
        )
        client.require_eval_capabilities(host, draft)
        if choice.suite_document is not None:
            host.put_suite(choice.suite_document)  # a version it already holds is a no-op
        suite = client.readable_suite(host, choice.suite_ref)
        request = replace(
            draft,
            fixture_runs=_under_own_tenant(host, choice.fixture_runs),
            baseline_run_id=_baseline_run(host, choice, suite, err),
            judge_source_run_id=_under_own_tenant(host, {"": choice.judge_source})[""]
            if choice.judge_source
            else None,
        )
        _check_live_tools(suite, request, offline=choice.offline, err=err)
        if choice.trials is not None:
            variant = client.publish_trials_variant(host, request.suite_ref, choice.trials)
            request = replace(request, suite_ref=variant)
            err.print(f"Suite with {choice.trials} trials per task: {variant}", highlight=False)
        total = client.planned_trials(host, request.suite_ref)
        run_id = host.create_run(request.body()).runId
        err.print(f"Eval run {run_id}", highlight=False)
        with EvalProgress(err, request.agent_id, total) as bar:
            watch = client.follow(host, run_id, agent_id=request.agent_id, on_update=bar.update)
        client.require_completed(host, watch)
        # A provider that did not answer failed trials that judge nothing of the agent.
        client.require_models_answered(host, run_id)
        summary = client.ensure_verdict(host, client.fetch_summary(host, run_id))
        auto = None
        if auto_budget is not None:
            auto = add_trials(host, request, summary, budget=auto_budget, err=err)
            summary = auto.summary
        facts = client.run_facts(host, run_id)
        why = read_why(host, run_id, summary, files)
        if auto is not None and why is not None:
            why = rejudged(why, auto)
    code = exit_code_for(summary, strict=strict)
    written = write_reports(files, summary, facts, code, why)
    result = result_lines(
        summary,
        run_id=run_id,
        live_calls=facts.live_calls,
        exit_code=code,
        revision=facts.revision,
    )
    print_outcome(files, summary, why, run_id, result, written)
    return code


def _under_own_tenant(host: client.WireClient, runs: dict[str, str]) -> dict[str, str]:
    """The recordings under the caller's tenant: an imported run keeps its hex id under
    the importing tenant, so a map made on production names them by their old tenant."""
    if not runs:
        return runs
    try:
        tenant = host.tenant()
    except client.HostError:
        return runs  # a host without the principal route: its ids are taken as given
    return client.under_tenant(runs, tenant)


def _baseline_run(
    host: client.WireClient, choice: EvalChoice, suite: Suite | None, err: Console
) -> str | None:
    """The baseline run id: as given, or the run `latest:TAG` picks (said on stderr)."""
    named = choice.baseline
    if named is None or not named.startswith(client.LATEST_PREFIX):
        return named
    tag = named.removeprefix(client.LATEST_PREFIX)
    if not tag:
        raise CliError("--baseline latest:TAG needs a tag, e.g. latest:main")
    suite_id = suite.suiteId if suite is not None else client.suite_id_of(choice.suite_ref)
    picked = client.latest_baseline(host, tag, suite_id, choice.agent)
    err.print(f"Baseline {named}: {picked.run_id}, completed {picked.age()} ago", highlight=False)
    return picked.run_id


def _check_live_tools(
    suite: Suite | None, request: client.EvalRequest, *, offline: bool, err: Console
) -> None:
    """Refuse an offline eval any of whose tasks could call a live tool (nothing is
    started); otherwise warn which tasks will. `suite`: as the host shows it, if it does."""
    if suite is None:
        if offline:
            raise CliError(
                f"--offline checks every task of the suite before it starts, and the host "
                f"does not show {request.suite_ref!r} (GET /host/wopeval/suites)"
            )
        return
    live = evals.tasks_reaching_live_tools(suite, request.fixture_runs, request.modes or ())
    if not live:
        return
    named = ", ".join(live)
    if offline:
        raise CliError(
            f"--offline: {len(live)} of {len(suite.tasks)} tasks could reach a live tool "
            f"({named}): give each a recorded run (--fixture-runs, --from-run) or fixtures "
            "with onMiss: fail. No run was started."
        )
    err.print(
        f"[yellow]warning:[/] {len(live)} of {len(suite.tasks)} tasks will call live tools "
        f"for any call no fixture answers: {named} (--offline refuses this)",
        highlight=False,
    )
