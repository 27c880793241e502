"""`engine/eval_runs/run_diff.py`: each log is read a page at a time, and no further than the bound.

A log longer than `limits.RUN_DIFF_MAX_EVENTS` is diffed as a prefix, which
makes the answer `truncated`: a large log gives a partial answer, never a slow
one. The bound and the store's page size are made small here so that a few
dozen events cross both.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from _backends import Backend
from _hosts import TENANT, running_host
from wopeval.engine.eval_runs.run_diff import diff_runs
from wopeval.store import _events
from wopeval.wire import limits
from wopeval.wire.principal import Principal
from wopeval.wire.run_diff import RunDiff
from wopeval.wire.runs import CreateRunRequest

PRINCIPAL = Principal(TENANT, "key-test")
SHORT, LONG = 12, 13
"""Noop nodes of the two chains: 2 + 2·12 = 26 and 28 events."""


def _write_project(project: Path) -> None:
    (project / "workflows").mkdir(parents=True)
    (project / "wopeval.toml").write_text('workflows = ["workflows/*.json"]\n')
    for nodes in (SHORT, LONG):
        document = {
            "id": f"chain-{nodes}",
            "nodes": [{"id": f"n{i}", "type": "core.noop"} for i in range(nodes)],
        }
        (project / "workflows" / f"chain-{nodes}.json").write_text(json.dumps(document))


def _ops(diff: RunDiff) -> list[tuple[int, str]]:
    return [(entry.seq, entry.op) for entry in diff.eventDiffs]


def test_a_log_past_the_bound_is_diffed_as_a_truncated_prefix(
    backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_events, "EVENTS_PAGE_SIZE", 7)
    _write_project(tmp_path / "project")

    async def scenario() -> tuple[RunDiff, RunDiff]:
        async with running_host(backend, tmp_path / "data", project=tmp_path / "project") as host:
            runs = []
            for nodes in (SHORT, LONG):
                request = CreateRunRequest(workflowId=f"chain-{nodes}")
                runs.append(await host.engine.create_workflow_run(PRINCIPAL, request))
            await host.engine.wait_idle()
            a, b = [await host.engine.get_run(PRINCIPAL, run.run_id) for run in runs]
            async with host.store.reading() as uow:
                whole = await diff_runs(uow, a, b)
                monkeypatch.setattr(limits, "RUN_DIFF_MAX_EVENTS", 20)
                bounded = await diff_runs(uow, a, b)
        return whole, bounded

    whole, bounded = asyncio.run(scenario())
    # Read whole over four pages: the chains differ in their workflow and in their tails.
    assert _ops(whole) == [(0, "changed"), (25, "changed"), (26, "added"), (27, "added")]
    assert whole.truncated is None
    assert set(whole.stateDiff) == {"outputs"}  # one node output more
    # Cut at 20 events: the tails are past the bound, and the answer says it is partial.
    assert _ops(bounded) == [(0, "changed")]
    assert bounded.truncated is True
    assert bounded.stateDiff == {}  # both prefixes end with the runs still running
