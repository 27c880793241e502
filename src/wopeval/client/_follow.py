"""Following a run over the wire: long-poll its events until it is terminal.

`RunWatch` keeps only counts and ids (the `eval.*` events are content-free),
which is all a progress bar or a verdict needs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from wopeval.client._wire import ClientError, WireClient
from wopeval.wire.events import EventDoc
from wopeval.wire.json_text import JsonObject
from wopeval.wire.runs import RunStatus

POLL_WAIT_SECONDS = 5
_TERMINAL = frozenset(status.value for status in RunStatus if status.is_terminal)


@dataclass
class RunWatch:
    """What the event log has shown so far (content-free: counts and ids)."""

    run_id: str
    agent_id: str | None = None
    status: str = "pending"
    task_count: int | None = None
    trials_done: int = 0
    scored: dict[str, bool] = field(default_factory=dict)
    scored_trials: int = 0
    last_sequence: int = -1

    @property
    def passed_tasks(self) -> int:
        return sum(self.scored.values())

    @property
    def failed_tasks(self) -> int:
        return len(self.scored) - self.passed_tasks

    @property
    def trials_seen(self) -> int:
        """Finished trials: invocations of the agent, never fewer than the scored tasks ran."""
        return max(self.trials_done, self.scored_trials)

    def apply(self, event: EventDoc) -> None:
        kind = event.type
        payload = event.payload if isinstance(event.payload, dict) else {}
        if kind == "eval.started":
            count = payload.get("taskCount")
            self.task_count = count if isinstance(count, int) else None
        elif kind == "eval.scored":
            self.scored[str(payload.get("taskId"))] = bool(payload.get("passed"))
            trials = payload.get("x-trials")
            self.scored_trials += trials if isinstance(trials, int) and trials else 1
        elif kind == "agent.invocation-completed" and (
            self.agent_id is None or payload.get("agentId") == self.agent_id
        ):
            self.trials_done += 1
        self.last_sequence = event.sequence


def follow(
    client: WireClient,
    run_id: str,
    *,
    agent_id: str | None = None,
    on_update: Callable[[RunWatch], None] | None = None,
    deadline_seconds: float | None = None,
) -> RunWatch:
    """Long-poll the run's events until it is terminal and every event has been read."""
    watch = RunWatch(run_id=run_id, agent_id=agent_id)
    started = time.monotonic()
    after: int | None = None
    while True:
        page = client.poll_events(run_id, after=after, wait_seconds=POLL_WAIT_SECONDS)
        for event in page.events:
            watch.apply(event)
            after = watch.last_sequence
        watch.status = str(page.status)
        if on_update is not None:
            on_update(watch)
        if page.isTerminal and (after if after is not None else -1) >= page.lastSequence:
            return watch
        if deadline_seconds is not None and time.monotonic() - started > deadline_seconds:
            raise ClientError(f"run {run_id} did not finish within {deadline_seconds:.0f} s")


def require_completed(client: WireClient, watch: RunWatch) -> None:
    """A run that failed or was cancelled judged nothing: that is an error, never a verdict."""
    if watch.status == "completed":
        return
    error = client.get_run(watch.run_id).error_line()
    detail = f": {error}" if error else ""
    raise ClientError(f"run {watch.run_id} ended {watch.status}{detail}")


def all_events(client: WireClient, run_id: str) -> list[EventDoc]:
    """Every event the run has logged so far (poll pages until the last sequence).

    A finished run is read to its terminal event: a poll page holds at most the host's
    page size, and a page cut short answers as a run still going, its `lastSequence` the
    page's own, so "caught up" alone would stop a long run's log at its first page."""
    finished = client.get_run(run_id).status in _TERMINAL
    collected: list[EventDoc] = []
    after: int | None = None
    while True:
        page = client.poll_events(run_id, after=after, wait_seconds=1)
        collected.extend(page.events)
        if page.events:
            after = page.events[-1].sequence
        caught_up = (after if after is not None else -1) >= page.lastSequence
        if not page.events or (caught_up and (page.isTerminal or not finished)):
            return collected


def run_outputs(client: WireClient, run_id: str) -> JsonObject | None:
    """A completed run's `outputs`, as its `run.completed` event carries them (the snapshot
    does not); None for a run that did not complete."""
    for event in reversed(all_events(client, run_id)):
        if event.type == "run.completed":
            payload = event.payload if isinstance(event.payload, dict) else {}
            outputs = payload.get("outputs")
            return outputs if isinstance(outputs, dict) else {}
    return None
