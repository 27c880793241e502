"""What creating a run takes: the executor that launches it, the host's settings, catalog and
invocation grants; a new run's record and the live tools its agents reach are made here."""

from __future__ import annotations

from dataclasses import dataclass

from wopeval.engine.catalog.catalog import Catalog
from wopeval.engine.recording.boundary import LiveTransport
from wopeval.engine.recording.grants import InvocationGrants
from wopeval.engine.recording.invocation import Invocation
from wopeval.engine.runlog.steps import now
from wopeval.engine.runs.execution import Executor
from wopeval.settings import Settings
from wopeval.store import RunRecord, next_created_seq
from wopeval.tools import ToolContext
from wopeval.wire import ids
from wopeval.wire.principal import Principal
from wopeval.wire.runs import CreateRunRequest, RunKind, RunStatus


@dataclass(frozen=True)
class RunMaker:
    executor: Executor
    settings: Settings
    catalog: Catalog
    grants: InvocationGrants[Invocation]
    catalog_digest: str | None
    """Recorded on each run made here: the catalog it was created under."""

    def record(
        self,
        principal: Principal,
        request: CreateRunRequest,
        kind: RunKind,
        workflow_id: str,
        *,
        suite_id: str | None = None,
    ) -> RunRecord:
        at = now()
        return RunRecord(
            run_id=ids.mint_run_id(principal.tenant),
            tenant=principal.tenant,
            kind=kind,
            workflow_id=workflow_id,
            status=RunStatus.RUNNING,
            owner=principal.owner(),
            request=request,
            plan=None,
            created_at=at,
            started_at=at,
            completed_at=None,
            error=None,
            outputs=None,
            summary=None,
            suite_id=suite_id,
            created_seq=next_created_seq(),
            catalog_digest=self.catalog_digest,
        )

    def live_transport(self, tenant: str, run_id: str) -> LiveTransport:
        return LiveTransport(
            self.catalog.tools,
            ToolContext(tenant=tenant, run_id=run_id),
            self.settings.tool_timeout_seconds,
            self.catalog.prices,
            enabled=self.settings.live_tools,
            redactor=self.catalog.redactor,
        )
