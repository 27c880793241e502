"""`wopeval judges calibrate JUDGE`: how well a project judge agrees with people's labels.

The host pairs the judge's verdicts at its current digest with the latest pass/fail label
a person gave the same eval-run task (`wopeval annotate RUN TASK --label …`), records the
calibration and answers it: accuracy, Cohen's kappa, the confusion table, the cases they
disagree on, and whether it clears the project's floor (docs/graders.md, "Calibration").
"""

from __future__ import annotations

import re
from typing import Annotated

import typer
from rich.console import Group as Lines
from rich.table import Table
from rich.text import Text

from wopeval.cli._exit import Group
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
)
from wopeval.cli._render import short_time
from wopeval.wire.calibration import CalibrationReport

app = typer.Typer(
    cls=Group,
    name="judges",
    help="Calibrate a project's rubric judge against people's pass/fail labels.",
    no_args_is_help=True,
    add_completion=False,
)

_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


@app.command("calibrate")
def calibrate(
    judge_id: Annotated[str, typer.Argument(help="A `[[judges]]` id.", show_default=False)],
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            help="Only labels made on or after this date (YYYY-MM-DD, UTC) or RFC 3339 instant.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead.")] = False,
    url: UrlOption = None,
    api_key: ApiKeyOption = None,
    data_dir: DataDirOption = DEFAULT_DATA_DIR,
    project: ProjectOption = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Pair JUDGE_ID's verdicts with people's labels, print the agreement, record it.

    Exit 0 when calibrated (whether or not it clears the floor), 4 on a usage,
    connection or host error.
    """
    target = Target(url, api_key, data_dir, project, database_url, reads_only=True)
    # A bare date is its first instant in UTC; anything else the host checks as RFC 3339.
    instant = f"{since}T00:00:00Z" if since is not None and _DATE.fullmatch(since) else since

    def run() -> None:
        with connect(target) as host:
            report = host.calibrate_judge(judge_id, instant)
        emit(report.to_wire(), as_json, lambda: render(report, url))

    guarded(run)


def render(report: CalibrationReport, base_url: str | None) -> Lines:
    """The report as a person reads it; links are full URLs when the host has one."""
    accuracy = "n/a" if report.accuracy is None else f"{report.accuracy:.2f}"
    kappa = "n/a" if report.kappa is None else f"{report.kappa:.2f}"
    head = Text(
        f"judge {report.judgeId} ({report.digest[:19]}…), gate = {str(report.gate).lower()}, "
        f"calibrated {short_time(report.calibratedAt)}\n"
        f"labels {report.labels}   accuracy {accuracy}   kappa {kappa}"
    )
    table = Table(title="confusion", title_justify="left")
    for column in ("", "person: pass", "person: fail"):
        table.add_column(column)
    matrix = report.confusion
    table.add_row("judge: pass", str(matrix.bothPass), str(matrix.judgePassHumanFail))
    table.add_row("judge: fail", str(matrix.judgeFailHumanPass), str(matrix.bothFail))
    floor = report.floor
    verdict = "clears" if report.clears else "does not clear"
    gates = "it gates" if report.clears and report.gate else "its rubric tasks are advisory"
    lines: list[Text | Table] = [
        head,
        table,
        Text(
            f"floor: kappa >= {floor.kappaMin:g} over >= {floor.minLabels} labels: "
            f"{verdict} ({gates})"
        ),
    ]
    if report.disagreements:
        lines.append(Text(f"disagreements ({len(report.disagreements)}):"))
        base = (base_url or "").rstrip("/")
        for case in report.disagreements:
            judge = "pass" if case.judgePassed else "fail"
            person = "pass" if case.humanPassed else "fail"
            lines.append(
                Text(
                    f"  judge {judge}, person {person}: run {case.runId} task {case.taskId}  "
                    f"{base}{case.dashboardPath}"
                )
            )
    return Lines(*lines)
