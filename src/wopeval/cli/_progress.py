"""A progress bar over tasks × trials, fed by the run's events (`RunWatch`), on stderr.

Trials advance on each finished invocation of the evaluated agent; the live
pass/fail counts come from `eval.scored`, one per task. When the suite cannot
be fetched (another host), the total is the task count from `eval.started`.
"""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from wopeval.client import RunWatch


class EvalProgress:
    """`with EvalProgress(console, label, total) as bar: follow(..., on_update=bar.update)`."""

    def __init__(self, console: Console, label: str, total_trials: int | None) -> None:
        self._total = total_trials
        self._label = label
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[unit]}"),
            TextColumn("[green]✓ {task.fields[passed]}[/] [red]✗ {task.fields[failed]}[/]"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self._task: TaskID | None = None

    def __enter__(self) -> EvalProgress:
        self._progress.start()
        self._task = self._progress.add_task(
            self._label, total=self._total, unit="trials", passed=0, failed=0
        )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._progress.stop()

    def update(self, watch: RunWatch) -> None:
        if self._task is None:
            return
        if self._total is None and watch.task_count is not None:
            # No suite document: count tasks instead of trials.
            self._progress.update(
                self._task,
                total=watch.task_count,
                completed=len(watch.scored),
                unit="tasks",
                passed=watch.passed_tasks,
                failed=watch.failed_tasks,
            )
            return
        self._progress.update(
            self._task,
            completed=min(watch.trials_seen, self._total or watch.trials_seen),
            passed=watch.passed_tasks,
            failed=watch.failed_tasks,
        )
