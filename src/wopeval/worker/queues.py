"""What goes through the queue: queue names, task names, and the jobs' arguments.

A job carries only work items, never content: the run it belongs to and, for an
eval, a chunk of `(task_id, trial)` pairs. Everything else (the plan, the derived
fixtures, the log) is read from the store.

Jobs are enqueued on a queue named after the run's catalog digest, and a worker
listens only on the queue of its own digest: a worker loaded with another
project never runs the work (maintenance.py logs what waits for others).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

EVAL_CHUNK = "wopeval.eval_chunk"
WORKFLOW_RUN = "wopeval.workflow_run"
TASKS = (EVAL_CHUNK, WORKFLOW_RUN)
QUEUE_PREFIX = "wopeval-"
_DIGEST_CHARS = 24
"""Hex digits of the digest in a queue name: PostgreSQL caps a NOTIFY channel at 63 bytes
and Procrastinate prefixes 23 to the queue name; 96 bits tell fleets apart."""

Pair = tuple[str, int]


def queue_name(catalog_digest: str) -> str:
    """The queue of the runs created under `catalog_digest` (`sha256:` + hex)."""
    return QUEUE_PREFIX + catalog_digest.removeprefix("sha256:")[:_DIGEST_CHARS]


def chunks(pairs: Iterable[Pair], size: int) -> Iterator[list[Pair]]:
    """Consecutive chunks of at most `size` pairs, in the plan's order (task by task)."""
    iterator = iter(pairs)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


@dataclass(frozen=True)
class JobArgs:
    """A job's arguments as stored in `procrastinate_jobs.args`."""

    run_id: str
    tenant: str
    pairs: tuple[Pair, ...] | None = None
    """An eval chunk's pairs; None for a workflow run."""
    stalls: int = 0
    """How often this work stalled before (a killed worker), counted for `max_stalls`."""

    @property
    def task_name(self) -> str:
        return WORKFLOW_RUN if self.pairs is None else EVAL_CHUNK

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "run_id": self.run_id,
            "tenant": self.tenant,
            "stalls": self.stalls,
        }
        if self.pairs is not None:
            document["pairs"] = [[task_id, trial] for task_id, trial in self.pairs]
        return document

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> JobArgs:
        pairs = document.get("pairs")
        return cls(
            run_id=str(document["run_id"]),
            tenant=str(document["tenant"]),
            pairs=None if pairs is None else tuple((str(t), int(n)) for t, n in pairs),
            stalls=int(document.get("stalls", 0)),
        )

    def again(self) -> JobArgs:
        """The same work after one more stall."""
        return JobArgs(self.run_id, self.tenant, self.pairs, self.stalls + 1)
