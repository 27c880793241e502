"""Creating a workflow run: its record and its body, the workflow interpreter
(workflow_runner.py), launched by the executor (execution.py)."""

from __future__ import annotations

from wopeval.engine.recording.boundary import Boundary
from wopeval.engine.runlog.log_writer import OnInsert
from wopeval.engine.runlog.steps import Step
from wopeval.engine.runs.execution import Execution
from wopeval.engine.runs.maker import RunMaker
from wopeval.engine.runs.outcome import Terminal
from wopeval.engine.runs.run_queue import Work
from wopeval.engine.runs.workflow_runner import WorkflowContext, run_workflow
from wopeval.store import RunRecord
from wopeval.wire import errors
from wopeval.wire.principal import Principal
from wopeval.wire.runs import CreateRunRequest, RunKind


async def create_workflow_run(
    maker: RunMaker,
    principal: Principal,
    request: CreateRunRequest,
    on_insert: OnInsert | None,
) -> RunRecord:
    workflow = maker.catalog.workflows.get(request.workflowId or "")
    if workflow is None:
        raise errors.ValidationFailed(
            f"workflowId {request.workflowId!r} is not a workflow of this host."
        )
    inputs = dict(request.inputs or {})
    record = maker.record(principal, request, RunKind.WORKFLOW, workflow.id)

    async def body(execution: Execution) -> Terminal:
        context = WorkflowContext(
            log=execution.log,
            control=execution.control,
            catalog=maker.catalog,
            boundary=Boundary(maker.live_transport(principal.tenant, record.run_id)),
            grants=maker.grants,
            invoked=execution.invoked,
        )
        return await run_workflow(workflow, inputs, context)

    return await maker.executor.launch(record, Step(), body, on_insert, Work())
