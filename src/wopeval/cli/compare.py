"""`wopeval compare`: the paired verdict between two finished eval runs of one suiteId."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

import typer

from wopeval import client, evals
from wopeval.cli._auto_trials import with_more_trials
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
from wopeval.cli._render import result_lines

SETTINGS: dict[str, Any] = {"cls": Command, "epilog": EXIT_CODES_HELP}
"""How main.py registers the command: usage errors exit 4; the exit codes in --help."""


def compare(
    baseline_run: Annotated[str, typer.Argument(help="The earlier eval run.", show_default=False)],
    candidate_run: Annotated[
        str, typer.Argument(help="The eval run to judge.", show_default=False)
    ],
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit 3 when the only differences are inconclusive.")
    ] = False,
    alpha: Annotated[
        float,
        typer.Option(
            "--alpha", min=0.0001, max=0.5, help="Family-wise error rate of the multi-trial tests."
        ),
    ] = client.DEFAULT_ALPHA,
    junit: JunitOption = None,
    json_file: JsonFileOption = None,
    markdown: MarkdownOption = None,
    html: HtmlOption = None,
    url: UrlOption = None,
    api_key: ApiKeyOption = None,
    data_dir: DataDirOption = DEFAULT_DATA_DIR,
    project: ProjectOption = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Judge CANDIDATE_RUN against BASELINE_RUN task by task (RFC 0244 §F pairing by taskId).

    Both summaries are read over the wire and paired here, so any OpenWOP host
    serving eval summaries will do. Runs of different suiteIds are refused.
    """
    target = Target(url, api_key, data_dir, project, database_url, reads_only=True)
    files = ReportFiles(junit=junit, json=json_file, html=html, markdown=markdown)
    code = guarded(lambda: run_compare(target, baseline_run, candidate_run, strict, alpha, files))
    raise typer.Exit(code)


def run_compare(
    target: Target,
    baseline_run: str,
    candidate_run: str,
    strict: bool,
    alpha: float,
    files: ReportFiles,
) -> ExitCode:
    with connect(target) as host:
        summary = client.compare_runs(host, baseline_run, candidate_run, alpha=alpha)
        # A side whose model provider did not answer proves nothing of its agent.
        for run_id in (baseline_run, candidate_run):
            client.require_models_answered(host, run_id)
        facts = client.run_facts(host, candidate_run)
        # The report names the baseline compared here, not the one the run was created with.
        facts = replace(facts, baseline=client.baseline_facts(host, baseline_run))
        why = read_why(host, candidate_run, summary, files)
        if why is not None:
            baseline = client.fetch_summary(host, baseline_run)
            more = evals.inconclusive_more_trials(baseline, summary, alpha=alpha)
            why = with_more_trials(why, more)
    code = exit_code_for(summary, strict=strict)
    written = write_reports(files, summary, facts, code, why)
    result = result_lines(summary, run_id=candidate_run, exit_code=code, revision=facts.revision)
    print_outcome(files, summary, why, candidate_run, result, written)
    return code
