"""Exit codes of the eval commands, decided in one place from the result (G13).

    0  passed, and no regression against the baseline
    1  the suite's thresholds failed (`EvalSummary.passed` is false)
    2  regression against the baseline (the paired verdict is `regressed`)
    3  only inconclusive differences (the verdict is `inconclusive`; only with --strict)
    4  could not run: a usage, connection or host error, a run that did not complete, a
       model provider that did not answer (nothing was judged)

Precedence, highest first: 4 > 2 > 1 > 3 > 0. An infrastructure error is 4
whatever else happened, because a run that did not finish proves nothing either
way; a verdict is never read from a failed run, so a regression cannot hide
behind an error and an error is never reported as a regression. A regression
beats a threshold failure: it names what changed, which is the news a CI gate
wants. A threshold failure beats an inconclusive difference: it is definite.

Click reports its own usage errors with 2, which would read as "regressed";
`Command` and `Group` re-map every usage error to 4. Typer (0.29+) vendors its
own copy of click as `typer._click`: its exceptions are not `click`'s, so the
classes below name typer's copy (pyproject pins a Typer that has it).
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

from typer._click.core import Command as ClickCommand
from typer._click.core import Context
from typer._click.exceptions import UsageError
from typer.core import TyperCommand, TyperGroup

from wopeval.hosting.exits import DATABASE_OWNED_EXIT

if TYPE_CHECKING:
    # `wopeval --version` imports this module (main.py's root group) and must not load
    # the wire models; `exit_code_for` imports `Verdict` when a verdict is decided.
    from wopeval.wire.summary import EvalSummary, Verdict


class ExitCode(enum.IntEnum):
    OK = 0
    THRESHOLD_FAILED = 1
    REGRESSED = 2
    INCONCLUSIVE = 3
    ERROR = 4


DATABASE_OWNED = DATABASE_OWNED_EXIT
"""`serve` and `purge`: another live process owns the database; nothing was changed."""

EXIT_CODES_HELP = (
    "Exit codes: 0 passed and no regression; 1 the suite's thresholds failed; "
    "2 regression against the baseline; 3 only inconclusive differences (with --strict, "
    "else 0); 4 could not run (a usage, connection or host error, a run that did not "
    "complete, a model provider that did not answer). Precedence: 4 > 2 > 1 > 3 > 0."
)
"""The table above in one paragraph, for `--help` epilogs."""


def verdict_of(summary: EvalSummary) -> Verdict | None:
    """The paired verdict a summary carries; None without a baseline."""
    return summary.regression.verdict if summary.regression is not None else None


def exit_code_for(summary: EvalSummary, *, strict: bool) -> ExitCode:
    """The exit code of a finished eval (or comparison), by the precedence above."""
    from wopeval.wire.summary import Verdict

    verdict = verdict_of(summary)
    if verdict is Verdict.REGRESSED:
        return ExitCode.REGRESSED
    if not summary.passed:
        return ExitCode.THRESHOLD_FAILED
    if strict and verdict is Verdict.INCONCLUSIVE:
        return ExitCode.INCONCLUSIVE
    return ExitCode.OK


class CliError(Exception):
    """A usage, connection or host error: the command prints the message and exits 4."""


def _as_usage_exit(exc: UsageError) -> UsageError:
    exc.exit_code = ExitCode.ERROR
    return exc


class _UsageErrorsExit4(ClickCommand):
    """Re-map click's usage errors (exit 2, which means "regressed" here) to exit 4."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: Context | None = None,
        **extra: Any,
    ) -> Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except UsageError as exc:
            raise _as_usage_exit(exc) from None

    def invoke(self, ctx: Context) -> Any:
        try:
            return super().invoke(ctx)
        except UsageError as exc:  # e.g. typer.BadParameter raised by a command body
            raise _as_usage_exit(exc) from None


class Command(_UsageErrorsExit4, TyperCommand):
    """A Typer command whose usage errors exit 4."""


class Group(_UsageErrorsExit4, TyperGroup):
    """A Typer group whose usage errors (unknown subcommand, missing argument) exit 4."""
