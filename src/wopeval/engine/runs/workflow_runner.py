"""The workflow interpreter: nodes in dependency order, each a unit of work with its own journal."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import JsonValue

from wopeval.engine.catalog.catalog import Catalog
from wopeval.engine.recording import content
from wopeval.engine.recording.boundary import Boundary
from wopeval.engine.recording.grants import InvocationGrants
from wopeval.engine.recording.invocation import Invocation, Where, run_invocation
from wopeval.engine.runlog.runlog import Journal, RunLog
from wopeval.engine.runs.control import RunControl
from wopeval.engine.runs.outcome import RunFailure, Terminal
from wopeval.wire import events
from wopeval.wire.json_text import JsonObject
from wopeval.wire.runs import IdleAgent, RunStatus
from wopeval.wire.workflows import Node, Workflow


@dataclass(frozen=True)
class WorkflowContext:
    log: RunLog
    control: RunControl
    catalog: Catalog
    boundary: Boundary
    grants: InvocationGrants[Invocation] | None
    invoked: set[str]
    done: Mapping[str, dict[str, JsonValue]] = field(default_factory=dict)
    """Outputs of nodes an earlier attempt completed (a queue job run again): not re-run."""
    idle: list[IdleAgent] = field(default_factory=list)
    """The nodes whose agent recorded nothing a replay could test: an earlier attempt's,
    then this one's."""


async def run_workflow(
    workflow: Workflow, inputs: dict[str, JsonValue], context: WorkflowContext
) -> Terminal:
    outputs: JsonObject = {}
    for node in workflow.order():
        if node.id in context.done:
            outputs[node.id] = context.done[node.id]
            continue

        async def attempt(node: Node = node) -> dict[str, JsonValue]:
            return await run_node(node, inputs, context)

        outputs[node.id] = await context.control.unit(attempt)
    return Terminal(RunStatus.COMPLETED, outputs=outputs, idle=context.idle or None)


async def run_node(
    node: Node, inputs: dict[str, JsonValue], context: WorkflowContext
) -> dict[str, JsonValue]:
    """One attempt of a node: `node.started` to its terminal node event, landed whole
    unless a live tool call lands part of it first."""
    journal = Journal(context.log)
    journal.emit(events.NodeStarted(nodeId=node.id, nodeType=node.type), node_id=node.id)
    node_outputs = await _execute(node, inputs, journal, context)
    journal.emit(events.NodeCompleted(nodeId=node.id, outputs=node_outputs), node_id=node.id)
    # Past cutting once handed over: no `await` between this and the hand-over in `flush`.
    context.control.landing()
    await journal.flush()
    return node_outputs


async def _execute(
    node: Node, inputs: dict[str, JsonValue], journal: Journal, context: WorkflowContext
) -> dict[str, JsonValue]:
    if node.type == "core.noop":
        return {}
    spec = context.catalog.agents.get(node.agentId or "")
    if spec is None:
        raise _node_failure(node, journal, "agent_not_found", f"no agent {node.agentId!r}")
    invocation = Invocation(
        spec=spec,
        input=node.inputs if node.inputs is not None else inputs,
        journal=journal,
        boundary=context.boundary,
        agents=context.catalog.agents,
        where=Where(context.log.run_id),
        node_id=node.id,
        grants=context.grants,
    )
    result = await run_invocation(invocation, source="workflow-node")
    context.invoked.update(result.invoked_agents)
    if result.failed:
        message = content.agent_failure(spec.agent_id, result.error, spec.wire_content)
        details: dict[str, JsonValue] = {"agentId": spec.agent_id}
        if result.error is not None:
            details["exceptionType"] = result.error["type"]
        raise _node_failure(node, journal, "agent_failed", message, details)
    if result.idle:
        # A false pass in the making: kept on the run row when it ends (docs/recordings.md).
        context.idle.append(
            IdleAgent(agentId=spec.agent_id, nodeId=node.id, reasons=list(result.idle))
        )
    return {"decision": result.decision}


def _node_failure(
    node: Node,
    journal: Journal,
    code: str,
    message: str,
    details: dict[str, JsonValue] | None = None,
) -> RunFailure:
    error = events.RunErrorInfo(code=code, message=message, details=details)
    journal.emit(events.NodeFailed(nodeId=node.id, error=error), node_id=node.id)
    return RunFailure(code, message, journal.take(), details)
