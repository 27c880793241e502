"""The workflow interpreter: nodes in dependency order, one committed step per node."""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue

from wopeval.engine.boundary import ToolTransport
from wopeval.engine.catalog import Catalog
from wopeval.engine.invocation import Invocation, run_invocation
from wopeval.engine.outcome import RunFailure, Terminal
from wopeval.engine.runlog import RunLog, Step
from wopeval.wire import events
from wopeval.wire.runs import RunStatus
from wopeval.wire.workflows import Node, Workflow


async def run_workflow(
    workflow: Workflow,
    inputs: dict[str, JsonValue],
    *,
    log: RunLog,
    catalog: Catalog,
    transport: ToolTransport,
    invoked: set[str],
) -> Terminal:
    outputs: dict[str, Any] = {}
    for node in workflow.order():
        step = Step()
        step.emit(events.NodeStarted(nodeId=node.id, nodeType=node.type), node_id=node.id)
        node_outputs = await _run_node(node, inputs, step, catalog, transport, invoked)
        step.emit(events.NodeCompleted(nodeId=node.id, outputs=node_outputs), node_id=node.id)
        outputs[node.id] = node_outputs
        await log.commit(step)
    return Terminal(RunStatus.COMPLETED, outputs=outputs)


async def _run_node(
    node: Node,
    inputs: dict[str, JsonValue],
    step: Step,
    catalog: Catalog,
    transport: ToolTransport,
    invoked: set[str],
) -> dict[str, JsonValue]:
    if node.type == "core.noop":
        return {}
    spec = catalog.agents.get(node.agentId or "")
    if spec is None:
        raise _node_failure(node, step, "agent_not_found", f"no agent {node.agentId!r}")
    invocation = Invocation(
        spec=spec,
        input=node.inputs if node.inputs is not None else inputs,
        step=step,
        transport=transport,
        agents=catalog.agents,
        node_id=node.id,
    )
    result = await run_invocation(invocation, source="workflow-node")
    invoked.update(result.invoked_agents or {spec.agent_id})
    if result.failed:
        raise _node_failure(node, step, "agent_failed", f"agent {spec.agent_id} failed")
    return {"decision": result.decision}


def _node_failure(node: Node, step: Step, code: str, message: str) -> RunFailure:
    error = events.RunErrorInfo(code=code, message=message)
    step.emit(events.NodeFailed(nodeId=node.id, error=error), node_id=node.id)
    return RunFailure(code, message, step)
