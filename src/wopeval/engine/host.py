"""The engine's facade (docs/design.md §1): what the API, the workers and the CLI ask of it,
each method handed to the room that does it.

A run's lifecycle (launch, execution, end, cancel, pause, fork, erasure) lives in
`engine/runs/`, an eval run's creation in `engine/eval_runs/`, suite publishing in
`engine/catalog/`; this class only holds the pieces they share and wires them together.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from wopeval.engine.catalog.catalog import Catalog
from wopeval.engine.catalog.suites import publish_suite
from wopeval.engine.live.notifier import Notifier
from wopeval.engine.recording.boundary import LiveTransport
from wopeval.engine.recording.grants import InvocationGrants
from wopeval.engine.recording.invocation import Invocation
from wopeval.engine.runlog.log_writer import LogWriter, OnInsert
from wopeval.engine.runlog.runlog import RunLog
from wopeval.engine.runs import commands, feedback
from wopeval.engine.runs.control import RunControl
from wopeval.engine.runs.create_workflow import create_workflow_run
from wopeval.engine.runs.erasure import Erasure, erase_run_tool_content
from wopeval.engine.runs.execution import Execution, Executor
from wopeval.engine.runs.maker import RunMaker
from wopeval.engine.runs.outcome import Terminal
from wopeval.engine.runs.replay import fork_run
from wopeval.engine.runs.run_queue import RunQueue
from wopeval.settings import Settings
from wopeval.store import OwnedRun, RunRecord, Store, StoredLabel
from wopeval.wire.annotations import Annotation, CreateAnnotationRequest
from wopeval.wire.calibration import CalibrationReport
from wopeval.wire.principal import Principal
from wopeval.wire.runs import CreateRunRequest, DrainPolicy, ForkRunRequest


class Engine:
    def __init__(
        self,
        *,
        settings: Settings,
        store: Store,
        catalog: Catalog,
        notifier: Notifier,
        catalog_digest: str | None = None,
        queue: RunQueue | None = None,
        broadcast: bool = False,
    ) -> None:
        """`catalog_digest` is recorded on each run created here; with a `queue` the runs
        are executed by workers; `broadcast` announces every commit to other processes
        (NOTIFY), which a queue implies."""
        self.settings = settings
        self.store = store
        self.catalog = catalog
        self.notifier = notifier
        self.catalog_digest = catalog_digest
        self.queue = queue
        self.writer = LogWriter(store, notifier, broadcast=broadcast or queue is not None)
        self.grants: InvocationGrants[Invocation] = InvocationGrants(settings.agent_base_url())
        self.executor = Executor(store, self.writer, queue)
        self.maker = RunMaker(self.executor, settings, catalog, self.grants, catalog_digest)

    # ── lifecycle ────────────────────────────────────────────────────

    async def recover(self) -> int:
        """End every run a stopped host left active (runs/execution.py)."""
        return await self.executor.recover()

    async def shutdown(self) -> None:
        await self.executor.shutdown()

    def active(self, run_id: str) -> bool:
        return self.executor.active(run_id)

    async def wait_idle(self) -> None:
        """Wait until no run is executing (tests and the embedded CLI use it)."""
        await self.executor.wait_idle()

    def run_log(self, record: RunRecord) -> RunLog:
        return self.executor.run_log(record)

    def stop(self, run_id: str) -> asyncio.Task[None] | None:
        return self.executor.stop(run_id)

    def execution(self, run_id: str) -> Execution | None:
        return self.executor.execution(run_id)

    async def end(
        self, run_log: RunLog, terminal: Terminal, invoked: set[str], control: RunControl | None
    ) -> None:
        await self.executor.end(run_log, terminal, invoked, control)

    def live_transport(self, tenant: str, run_id: str) -> LiveTransport:
        return self.maker.live_transport(tenant, run_id)

    # ── creating runs ────────────────────────────────────────────────

    async def create_workflow_run(
        self, principal: Principal, request: CreateRunRequest, *, on_insert: OnInsert | None = None
    ) -> RunRecord:
        return await create_workflow_run(self.maker, principal, request, on_insert)

    async def create_eval_run(
        self, principal: Principal, request: CreateRunRequest, *, on_insert: OnInsert | None = None
    ) -> RunRecord:
        """Resolve the request into a plan (every refusal happens there), then run it."""
        # Imported on the first eval run, not with the engine: the eval runner, its grading
        # and judging are a tenth of a host's start, which a listing never uses (issue 28).
        from wopeval.engine.eval_runs.create_eval import create_eval_run

        return await create_eval_run(self.maker, principal, request, on_insert)

    async def fork_run(
        self,
        principal: Principal,
        run_id: str,
        request: ForkRunRequest,
        *,
        on_insert: OnInsert | None = None,
    ) -> RunRecord:
        return await fork_run(self.store, self.notifier, principal, run_id, request, on_insert)

    # ── a caller's commands ──────────────────────────────────────────

    async def cancel_run(self, principal: Principal, run_id: str, reason: str | None) -> RunRecord:
        return await commands.cancel_run(self.executor, principal, run_id, reason)

    async def bulk_cancel(
        self, principal: Principal, run_ids: list[str], reason: str | None
    ) -> list[dict[str, Any]]:
        return await commands.bulk_cancel(self.executor, principal, run_ids, reason)

    async def pause_run(
        self, principal: Principal, run_id: str, drain_policy: DrainPolicy
    ) -> commands.Transitioned:
        return await commands.pause_run(self.executor, principal, run_id, drain_policy)

    async def resume_run(self, principal: Principal, run_id: str) -> commands.Transitioned:
        return await commands.resume_run(self.executor, principal, run_id)

    async def erase_tool_content(self, principal: Principal, run_id: str) -> Erasure:
        return await erase_run_tool_content(self.store, self.notifier, principal, run_id)

    async def publish_suite(
        self, principal: Principal, document: dict[str, Any]
    ) -> tuple[dict[str, Any], bool]:
        """Publish a suite version for the caller's tenant (catalog/suites.py), and make
        what its eval runs will read of it alone (eval_plan.py `prepare_version`)."""
        from wopeval.engine.eval_runs.eval_plan import prepare_version  # as create_eval_run

        stored, created = await publish_suite(self.store, self.catalog, principal, document)
        kept = self.catalog.parsed_suites.get(principal.tenant, stored)
        prepare_version(kept, self.settings.eval)
        return stored, created

    async def annotate(
        self,
        principal: Principal,
        run_id: str,
        request: CreateAnnotationRequest,
        *,
        on_insert: feedback.OnAnnotation | None = None,
    ) -> Annotation:
        """Record an annotation beside the caller's run (RFC 0056; runs/feedback.py)."""
        return await feedback.create_annotation(
            self.store, self.notifier, self.catalog, principal, run_id, request, on_insert
        )

    async def calibrate_judge(
        self, principal: Principal, judge_id: str, since: datetime | None = None
    ) -> CalibrationReport:
        """Calibrate a judge against the caller's labels, recorded (eval_runs/calibration.py)."""
        from wopeval.engine.eval_runs.calibration import calibrate_judge  # as create_eval_run

        return await calibrate_judge(self.store, self.catalog, principal, judge_id, since)

    # ── reads ────────────────────────────────────────────────────────

    async def annotations(self, principal: Principal, run_id: str) -> list[Annotation]:
        return await feedback.list_annotations(self.store, principal, run_id)

    async def task_labels(self, tenant: str, since: datetime | None = None) -> list[StoredLabel]:
        """The tenant's pass/fail labels on its eval runs' tasks (what calibration reads)."""
        return await feedback.task_labels(self.store, tenant, since)

    async def get_run(self, principal: Principal, run_id: str) -> OwnedRun:
        return await self.executor.get_run(principal, run_id)
