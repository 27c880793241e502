"""Baselines by name: `latest:TAG` is the newest completed eval run of the same suiteId and
agent carrying TAG (RFC 0251 §C still decides, at create, whether it is usable)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from wopeval.client._wire import ClientError, WireClient
from wopeval.reports import age_text, parse_instant

LATEST_PREFIX = "latest:"
"""`--baseline latest:TAG`."""


@dataclass(frozen=True)
class PickedBaseline:
    run_id: str
    completed_at: datetime

    def age(self) -> str:
        return age_text(self.completed_at, datetime.now(UTC))


def latest_baseline(host: WireClient, tag: str, suite_id: str, agent_id: str) -> PickedBaseline:
    """The newest completed eval run of `suite_id` by `agent_id` tagged `tag`."""
    pages = host.run_pages(workflow_id=suite_id, status="completed", tag=tag, agent_id=agent_id)
    for page in pages:
        for run in page.runs:
            if run.extension("wopeval.run").get("kind") == "eval" and run.completedAt:
                return PickedBaseline(run.runId, parse_instant(run.completedAt))
    raise ClientError(
        f"no completed eval run of {suite_id} by {agent_id} carries the tag {tag!r}: "
        "run the baseline first (e.g. on the main branch, with --tag " + tag + ")"
    )
