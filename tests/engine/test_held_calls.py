"""`ToolCallsRepo.held_calls`: a fixture source's calls as derivation reads them.

The read selects only what derivation needs and says, per source, whether every call is
still held. Each way a call stops being held (its agent's `record` off, erased, an outcome
that never reached the record) must clear that flag on both stores; the calls it returns
must be the recorded ones, field for field, in sequence order.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from _backends import Backend
from _hosts import TENANT, running_host
from wopeval.hosting.host import Host
from wopeval.store import RunHandle
from wopeval.store.tables import tool_calls
from wopeval.wire.principal import Principal
from wopeval.wire.runs import CreateRunRequest, RunStatus

AGENT = "conformance.scripted-agent"
SCRIPT: dict[str, Any] = {
    "calls": [
        {"tool": "conformance.eval:counter", "args": {"op": "inc", "key": "held"}},
        {"tool": "conformance.eval:counter", "args": {"op": "read", "key": "held"}},
        {"tool": "conformance.eval:counter", "args": {"op": "inc", "key": "held"}},
    ],
    "answer": "done",
}
NOT_HELD: dict[str, dict[str, Any]] = {
    "record-off": {"recorded": False},
    "erased": {"erased_at": datetime(2026, 1, 1, tzinfo=UTC)},
    "outcome-unknown": {"status": "unknown"},
}


async def _sources(host: Host, count: int) -> list[RunHandle]:
    principal = Principal(TENANT, "key-test")
    handles = []
    for _ in range(count):
        record = await host.engine.create_workflow_run(
            principal, CreateRunRequest(workflowId="conformance-agent-counter", inputs=SCRIPT)
        )
        await host.engine.wait_idle()
        assert (await host.engine.get_run(principal, record.run_id)).status is RunStatus.COMPLETED
        async with host.store.reading() as uow:
            (state,) = (await uow.runs.states(TENANT, [record.run_id])).values()
        handles.append(state.handle)
    return handles


@pytest.mark.parametrize("change", sorted(NOT_HELD))
def test_a_call_no_longer_held_clears_its_source_alone(
    backend: Backend, tmp_path: Path, change: str
) -> None:
    async def scenario() -> None:
        async with running_host(backend, tmp_path) as host:
            changed, kept = await _sources(host, 2)
            async with host.store.reading() as uow:
                before = await uow.tool_calls.held_calls([changed, kept], AGENT)
                recorded = await uow.tool_calls.page(changed, after=-1, limit=100)
            assert before[changed.run_id][1]
            assert before[kept.run_id][1]
            # Field for field what the full record says, in sequence order, its contents
            # as the JSON text they are stored as.
            assert [
                (c.sequence, c.agent_id, c.is_delegate, c.tool, json.loads(c.inputs), c.status,
                 json.loads(c.result), json.loads(c.error))
                for c in before[changed.run_id][0]
            ] == [
                (c.sequence, c.agent_id, c.is_delegate, c.tool, c.inputs, c.status, c.result,
                 c.error)
                for c in recorded
            ]  # fmt: skip
            assert [json.loads(c.inputs) for c in before[kept.run_id][0]] == [
                call["args"] for call in SCRIPT["calls"]
            ]
            async with host.store.transaction() as uow:
                await uow.connection.execute(
                    update(tool_calls)
                    .where(
                        tool_calls.c.run_id == changed.run_id,
                        tool_calls.c.sequence == recorded[1].sequence,
                    )
                    .values(**NOT_HELD[change])
                )
            async with host.store.reading() as uow:
                after = await uow.tool_calls.held_calls([changed, kept], AGENT)
            assert after[changed.run_id][1] is False
            assert after[kept.run_id][1] is True
            assert len(after[changed.run_id][0]) == len(SCRIPT["calls"])

    asyncio.run(scenario())
