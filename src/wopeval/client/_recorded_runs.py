"""The workflow runs a suite is made from: named by id, or every run carrying a tag.

A run named by id that cannot be used is an error naming it; a run found by
tag that cannot be used is skipped, and `notify` says why, since a tag
usually gathers runs of several kinds, agents and outcomes. A run whose agent
recorded nothing a replay could test (an idle run: no tool call, or no model
call though it was handed the model proxy; docs/recordings.md) is one that
cannot be used, unless `include_idle`: then it is used, and `notify` says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import JsonValue

from wopeval.client._answers import RunSnapshot
from wopeval.client._follow import run_outputs
from wopeval.client._suite_from_runs import RecordedRun, recorded_run
from wopeval.client._wire import ClientError, HostError, WireClient
from wopeval.wire.limits import RUN_LIST_MAX_PAGE_SIZE

RUN_EXTENSION = "wopeval.run"
"""The snapshot extension with a run's kind, agents and outputs (`api/snapshots.py`)."""


def runs_by_id(
    host: WireClient,
    run_ids: Sequence[str],
    agent_id: str,
    *,
    include_idle: bool = False,
    notify: Callable[[str], None] = lambda _: None,
) -> list[RecordedRun]:
    """Each named run (in the order named, once each); ClientError naming the first that
    is missing, not yours, not a completed workflow run, did not invoke `agent_id`, or is
    idle (unless `include_idle`)."""
    found: list[RecordedRun] = []
    workflows = _Workflows(host)
    for run_id in dict.fromkeys(run_ids):
        try:
            snapshot = host.get_run(run_id)
        except HostError as exc:
            if exc.status in (400, 403, 404):
                raise ClientError(f"run {run_id}: no such run for this key ({exc})") from None
            raise
        problem = _unusable(snapshot, agent_id) or _idle(snapshot, agent_id, include_idle, notify)
        if problem is not None:
            raise ClientError(f"run {run_id} {problem}")
        found.append(_recorded(host, snapshot, workflows))
    return found


def runs_by_tag(
    host: WireClient,
    tag: str,
    agent_id: str,
    *,
    created_after: str | None,
    notify: Callable[[str], None],
    include_idle: bool = False,
) -> list[RecordedRun]:
    """Every usable workflow run carrying `tag` (created after `created_after`), oldest
    first; the others (idle ones too, unless `include_idle`) are skipped with a note.
    ClientError when none is usable."""
    pages = host.run_pages(limit=RUN_LIST_MAX_PAGE_SIZE, tag=tag, created_after=created_after)
    listed = [run for page in pages for run in page.runs]
    found: list[RecordedRun] = []
    workflows = _Workflows(host)
    for snapshot in reversed(listed):  # the listing is newest first
        if _kind(snapshot) not in (None, "workflow"):
            continue  # eval runs and replay forks carry tags too; they are no recordings
        problem = _unusable(snapshot, agent_id) or _idle(snapshot, agent_id, include_idle, notify)
        if problem is not None:
            notify(f"skipped run {snapshot.runId}: it {problem}")
            continue
        found.append(_recorded(host, snapshot, workflows))
    if not found:
        since = f" created after {created_after}" if created_after else ""
        raise ClientError(
            f"no completed workflow run of agent {agent_id} carries tag {tag!r}{since}"
        )
    return found


def _kind(snapshot: RunSnapshot) -> str | None:
    kind = snapshot.extension(RUN_EXTENSION).get("kind")
    return str(kind) if kind is not None else None


def _unusable(snapshot: RunSnapshot, agent_id: str) -> str | None:
    """Why the run cannot become a task (a phrase after "run X"), or None."""
    kind = _kind(snapshot)
    if kind not in (None, "workflow"):
        return f"is a{'n' if kind == 'eval' else ''} {kind} run, not a workflow run"
    if snapshot.status != "completed":
        return f"is {snapshot.status}, not completed: it recorded no decision"
    agents = snapshot.extension(RUN_EXTENSION).get("agentIds")
    # RFC 0252 §D derives fixtures from the calls of the eval's agent: another's are no use.
    if isinstance(agents, list) and agent_id not in agents:
        invoked = ", ".join(str(agent) for agent in agents) or "none"
        return f"did not invoke agent {agent_id} (it invoked {invoked})"
    return None


def _idle(
    snapshot: RunSnapshot, agent_id: str, include: bool, notify: Callable[[str], None]
) -> str | None:
    """Why an idle run cannot become a task (a phrase after "run X"), or None: not idle, or
    `include` (then `notify` says it was kept)."""
    from wopeval import evals

    listed = snapshot.extension(RUN_EXTENSION).get("idle")
    reasons = [
        str(reason)
        for idle in _list(listed)
        if isinstance(idle, dict) and idle.get("agentId") == agent_id
        for reason in _list(idle.get("reasons"))
    ]
    if not reasons:
        return None
    # "agent A made no tool call": what a replay of the task would test is nothing it did.
    said = evals.describe_idle(agent_id, list(dict.fromkeys(reasons)))
    if include:
        notify(f"included idle run {snapshot.runId} (--include-idle): {said}")
        return None
    return f"is idle: {said}, so a replay would test nothing it recorded (--include-idle keeps it)"


def _list(value: JsonValue) -> list[JsonValue]:
    return value if isinstance(value, list) else []


def _recorded(host: WireClient, snapshot: RunSnapshot, workflows: _Workflows) -> RecordedRun:
    outputs = snapshot.extension(RUN_EXTENSION).get("outputs")
    if not isinstance(outputs, dict):
        # A host without this extension: the outputs are on the run's `run.completed` event.
        outputs = run_outputs(host, snapshot.runId) or {}
    return recorded_run(snapshot.document(), outputs, workflows.node_inputs(snapshot.workflowId))


class _Workflows:
    """Each workflow's nodes with an input of their own, read once per workflow."""

    def __init__(self, host: WireClient) -> None:
        self._host = host
        self._read: dict[str, dict[str, JsonValue]] = {}

    def node_inputs(self, workflow_id: str) -> dict[str, JsonValue]:
        if workflow_id not in self._read:
            document = self._host.get_workflow(workflow_id) or {}
            self._read[workflow_id] = {
                str(node["id"]): node["inputs"]
                for node in _list(document.get("nodes"))
                if isinstance(node, dict) and "inputs" in node
            }
        return self._read[workflow_id]
