"""`wopeval demo`: record five production runs, replay them to a changed agent, compare.

Exit codes: 0 the demo ran as designed (it finds the one regression it was
built to find, with zero live tool calls during the replays); 1 it ran but
its story did not hold (a bug: the reasons are printed); 4 usage or host error.
The regression itself is the expected outcome, so it is not exit 2 here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Group, RenderableType
from rich.text import Text

from wopeval.cli._exit import Command, ExitCode
from wopeval.cli._options import guarded, stdout_console
from wopeval.cli._render import result_lines, task_table
from wopeval.cli._why import reason_lines
from wopeval.demo import DemoResult, run_demo

SETTINGS: dict[str, Any] = {"cls": Command}
"""How main.py registers the command: usage errors exit 4."""

DEFAULT_DEMO_DIR = Path(".wopeval-demo")
NOT_AS_DESIGNED = 1


def demo(
    data_dir: Annotated[
        Path,
        typer.Option("--data-dir", help="Where the demo keeps its host's data and project."),
    ] = DEFAULT_DEMO_DIR,
    html: Annotated[
        Path | None,
        typer.Option("--html", metavar="FILE", help="Report path (default DATA_DIR/report.html)."),
    ] = None,
) -> None:
    """Record a support agent's runs, replay them to a changed agent, and show the verdict.

    Nothing to install or configure: a loopback CRM service, an in-process host
    on SQLite, a python agent in two versions. Exit 0 when it ran as designed.
    """
    out = stdout_console()
    steps = iter(range(1, 100))

    def narrate(text: str) -> None:
        out.print(Text.assemble((f"{next(steps)}. ", "bold cyan"), text))

    out.print(Text("wopeval demo — record, replay, compare", style="bold"))
    result = guarded(lambda: run_demo(data_dir, html or data_dir / "report.html", on_step=narrate))
    out.print(conclusion(result))
    raise typer.Exit(ExitCode.OK if result.as_designed else NOT_AS_DESIGNED)


def conclusion(result: DemoResult) -> Group:
    """The closing block: verdict table, headline facts, report path, what to try next."""
    lines: list[RenderableType] = [
        task_table(result.candidate, title="Baseline (v1) vs candidate (v2), per task")
    ]
    if result.why is not None:
        reasons = reason_lines(result.candidate, result.why, result.candidate_run_id)
        if reasons is not None:
            lines.append(reasons)
    lines += [
        result_lines(result.candidate, run_id=result.candidate_run_id),
        Text.assemble(
            ("Live tool calls".ljust(17), "bold"),
            f"{result.live_calls if result.live_calls is not None else 'unknown'} during the "
            f"replays (CRM requests: {result.crm_requests_in_production} in production, "
            f"{result.crm_requests_in_replay} in replay)",
        ),
        Text.assemble(("HTML report".ljust(17), "bold"), str(result.report_path.resolve())),
    ]
    if result.as_designed:
        lines.append(
            Text(
                "\nThe suite's aggregate bar still passes, but the paired verdict caught the "
                "one case v2 broke — replayed from recorded production calls, none run live.",
                style="green",
            )
        )
        lines.append(
            Text(
                f"Explore: wopeval runs list --data-dir {result.data_dir}\n"
                f"         wopeval explain {result.candidate_run_id} --data-dir {result.data_dir}\n"
                f"         wopeval compare {result.baseline_run_id} {result.candidate_run_id} "
                f"--data-dir {result.data_dir}\n"
                f"         wopeval ui --data-dir {result.data_dir}   (the dashboard: sign in "
                f"with the key in {result.data_dir / 'dev-api-key'})",
                style="dim",
            )
        )
    else:
        lines.append(Text("The demo did not run as designed:", style="bold red"))
        lines.extend(Text(f"  - {problem}", style="red") for problem in result.problems)
    return Group(*lines)
