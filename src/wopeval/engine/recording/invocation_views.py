"""Reading a run's invocations: how each ended, whether it was idle, what its agent said,
and the model exchanges each made.

One read for the invocation routes, the CLI (`wopeval run`, `runs show`) and the
dashboard's run page; what of it leaves the host is `content.py`'s call, by each
agent's `wireContent` now.
"""

from __future__ import annotations

from wopeval.agents import AgentRegistry, WireContent
from wopeval.engine.recording import content
from wopeval.store import OwnedRun, UnitOfWork
from wopeval.wire import errors
from wopeval.wire.invocations import (
    InvocationLine,
    InvocationList,
    InvocationStderr,
    RunModelCalls,
)


async def invocation_list(
    uow: UnitOfWork, record: OwnedRun, agents: AgentRegistry
) -> InvocationList:
    """Every invocation of the caller's run that ended, in the order they started."""
    stored = await uow.invocations.listing(record.handle)
    return InvocationList(
        runId=record.run_id,
        invocations=[
            content.invocation_line(line, _mode(agents, line.agent_id)) for line in stored
        ],
    )


async def invocation_stderr(
    uow: UnitOfWork, record: OwnedRun, invocation_id: str, agents: AgentRegistry
) -> InvocationStderr:
    """What one invocation's agent said; 404 when the caller's run has no such invocation."""
    said = (await uow.invocations.said(record.handle, [invocation_id])).get(invocation_id)
    if said is None:
        raise errors.NotFound("No such invocation in this run.")
    return content.invocation_stderr(record.run_id, said, _mode(agents, said.agent_id))


async def model_call_list(
    uow: UnitOfWork, record: OwnedRun, agents: AgentRegistry
) -> RunModelCalls:
    """Every model exchange of the caller's run, in the order they ended."""
    rows = await uow.model_calls.of_run(record.handle)
    # Numbered as the run listed them: an exchange's place among the run's.
    shown = [
        content.run_model_call(n, row, _mode(agents, row.agent_id)) for n, row in enumerate(rows)
    ]
    return RunModelCalls(runId=record.run_id, modelCalls=shown)


async def invocations_said(
    uow: UnitOfWork, record: OwnedRun, agents: AgentRegistry, limit: int
) -> list[tuple[InvocationLine, str | None]]:
    """The run's first `limit` invocations, each with what its agent said where it may be
    shown (the dashboard's run page)."""
    lines = (await invocation_list(uow, record, agents)).invocations[:limit]
    kept = [line.invocationId for line in lines if line.stderr == "kept"]
    said = await uow.invocations.said(record.handle, kept) if kept else {}
    return [
        (line, said[line.invocationId].stderr if line.invocationId in said else None)
        for line in lines
    ]


def _mode(agents: AgentRegistry, agent_id: str) -> WireContent | None:
    spec = agents.get(agent_id)
    return None if spec is None else spec.wire_content
