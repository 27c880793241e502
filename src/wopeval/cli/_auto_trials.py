"""`wopeval eval --trials auto`: more trials for exactly the inconclusive tasks, within a budget.

After the first run, each task the paired verdict calls inconclusive has a
count of extra trials that would decide it at its observed pass rates
(`evals.inconclusive_more_trials`). The budget goes to the smallest counts
first (`evals.allocate_trials`), and those trials run as an eval run of their
own: a suite variant holding only those tasks, each with its extra trials
(the wire has no per-task trials property), with the same agent, baseline,
modes and recordings, and none of the first run's tags, so a `latest:TAG`
pick never lands on a part-suite. Every run is an ordinary eval run with its
own honest summary. The verdict over all trials pools the runs' counts per
task (`evals.pool_summaries`) and judges the pool against the baseline's
summary at the client's α. Rounds repeat while budget is left and some task
is still inconclusive with a count that fits (docs/decisions.md, "`--trials
auto`").
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rich.console import Console

from wopeval import client, evals, reports
from wopeval.cli._exit import CliError
from wopeval.wire.summary import EvalSummary, TaskRegression, TaskSummary
from wopeval.wire.task_detail import MoreTrialsView, TaskLine

DEFAULT_BUDGET = 50
"""Extra trials `--trials auto` may add over all tasks when `--trials-budget` is not given."""


@dataclass(frozen=True)
class AutoTrials:
    summary: EvalSummary
    """The verdict over all trials (the first run's own summary when none were added)."""
    added: tuple[dict[str, int], ...]
    """Per extra run, in order: task id → the trials it added."""
    more: dict[str, evals.MoreTrials]
    """What more trials would do for each task still inconclusive at the end."""

    @property
    def spent(self) -> int:
        return sum(n for allocation in self.added for n in allocation.values())


def add_trials(
    host: client.WireClient,
    request: client.EvalRequest,
    first: EvalSummary,
    *,
    budget: int,
    err: Console,
) -> AutoTrials:
    """Run extra trials for the inconclusive tasks of `first` until decided or out of budget."""
    regression = first.regression
    if regression is None:
        err.print("--trials auto: no baseline, so no task is inconclusive", highlight=False)
        return AutoTrials(first, (), {})
    baseline = client.fetch_summary(host, regression.baselineRunId)
    suite = client.readable_suite(host, request.suite_ref)
    if suite is None:
        raise CliError(
            f"--trials auto needs the host to show the suite {request.suite_ref!r} "
            "(GET /host/wopeval/suites)"
        )
    alpha = evals.DEFAULT_ALPHA
    pooled, left, added = first, budget, []
    more = evals.inconclusive_more_trials(baseline, pooled, alpha=alpha)
    while left > 0:
        needs = {task: m.trials for task, m in more.items() if m.trials is not None}
        allocation = evals.allocate_trials(needs, left)
        if not allocation:
            break
        run_id = _run_extra(host, request, allocation, err)
        extra = client.fetch_summary(host, run_id)
        pooled = evals.with_regression(
            evals.pool_summaries(suite, pooled, extra), regression.baselineRunId, baseline, alpha
        )
        left -= sum(allocation.values())
        added.append(allocation)
        more = evals.inconclusive_more_trials(baseline, pooled, alpha=alpha)
    auto = AutoTrials(pooled, tuple(added), more)
    err.print(
        f"--trials auto: {auto.spent} of {budget} extra trials in {len(added)} run(s); "
        f"{len(more)} task(s) still inconclusive",
        highlight=False,
    )
    return auto


def _run_extra(
    host: client.WireClient, request: client.EvalRequest, allocation: dict[str, int], err: Console
) -> str:
    ref = client.publish_extra_trials_variant(host, request.suite_ref, allocation)
    extra = replace(
        request,
        suite_ref=ref,
        fixture_runs={k: v for k, v in request.fixture_runs.items() if k in allocation},
        tags=(),
    )
    run_id = host.create_run(extra.body()).runId
    added = ", ".join(f"{task} +{n}" for task, n in allocation.items())
    err.print(f"Extra trials: eval run {run_id} ({added})", highlight=False)
    client.require_completed(host, client.follow(host, run_id, agent_id=request.agent_id))
    return run_id


def with_more_trials(why: reports.RunWhy, more: dict[str, evals.MoreTrials]) -> reports.RunWhy:
    """The task lines with `more`'s counts in place of the host's, which judged the run
    against its own baseline (`wopeval compare` pairs it with another)."""
    lines = [
        line.model_copy(update={"moreTrials": _view(more.get(line.taskId))})
        for line in why.listing.tasks
    ]
    return reports.RunWhy(why.listing.model_copy(update={"tasks": lines}), why.details)


def _view(more: evals.MoreTrials | None) -> MoreTrialsView | None:
    return None if more is None else more.view()


def rejudged(why: reports.RunWhy, auto: AutoTrials) -> reports.RunWhy:
    """The first run's task lines with the pooled figures and verdicts laid over them."""
    if not auto.added:
        return why
    tasks = {task.taskId: task for task in auto.summary.tasks}
    paired = reports.paired(auto.summary)
    lines = [_line(line, tasks, paired, auto.more) for line in why.listing.tasks]
    listing = why.listing.model_copy(update={"tasks": lines})
    return reports.RunWhy(listing, why.details)


def _line(
    line: TaskLine,
    tasks: dict[str, TaskSummary],
    paired: dict[str, TaskRegression],
    more: dict[str, evals.MoreTrials],
) -> TaskLine:
    task, pair, found = tasks.get(line.taskId), paired.get(line.taskId), more.get(line.taskId)
    if task is None:
        return line
    return line.model_copy(
        update={
            "passed": task.passed,
            "score": task.score,
            "trials": task.trials,
            "passedTrials": task.passedTrials,
            "verdict": None if pair is None else pair.verdict.value,
            "pValue": None if pair is None else pair.pValue,
            "flaky": None if pair is None else pair.flaky,
            "moreTrials": _view(found),
        }
    )
