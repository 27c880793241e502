"""What a host answers, as the client reads it, where the wire has no model of its own.

Run documents and the wopeval host routes' listings are open: a newer host may add
members, and the client keeps them (`document()` gives the answer back as it came)
rather than refusing the answer. Where the wire does have the model (the event
envelope, the eval summary, task details, invocations), `WireClient` reads that one.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, JsonValue

from wopeval.wire.json_text import JsonObject


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    def document(self) -> JsonObject:
        """The answer as the host sent it: its members in its order, none added."""
        return self.model_dump(mode="json", exclude_unset=True)


class RunCreated(_Open):
    """The createRun answer (runs.md §Create)."""

    runId: str
    """The new run."""
    status: str
    """Its status when created."""


class RunSnapshot(_Open):
    """A run's snapshot (runs.md §Snapshot); the members are declared in the order this host
    writes them, so `document()` of its snapshot is the snapshot as sent."""

    runId: str
    """The run."""
    workflowId: str
    """Its workflow (an eval run's: its suiteId)."""
    status: str
    """Its status."""
    owner: JsonValue = None
    """Its owner block."""
    eventLogSchemaVersion: int | None = None
    """The version of its event log."""
    startedAt: str | None = None
    """When it started."""
    completedAt: str | None = None
    """When it ended."""
    error: JsonObject | None = None
    """A failed run's error (`code`, `message`, `details`)."""
    inputs: JsonValue = None
    """The createRun `inputs`."""
    tags: list[str] | None = None
    """The createRun `tags`."""
    metadata: JsonObject | None = None
    """The createRun `metadata`."""
    configurable: JsonValue = None
    """The createRun `configurable`."""
    parentRunId: str | None = None
    """The run it was forked from."""
    extensions: dict[str, JsonValue] | None = None
    """Vendor extensions, keyed `<org>.<name>` (this host's: `wopeval.run`)."""

    def extension(self, name: str) -> JsonObject:
        """One extension's object ({} from a host that does not send it)."""
        found = (self.extensions or {}).get(name)
        return found if isinstance(found, dict) else {}

    def error_line(self) -> str:
        """`code: message` of a failed run's error; '' when it has none."""
        if not self.error:
            return ""
        return f"{self.error.get('code')}: {self.error.get('message')}"


class RunPage(_Open):
    """One page of `GET /runs`, newest first."""

    runs: list[RunSnapshot] = []
    """The page's runs."""
    nextCursor: str | None = None
    """The next page's cursor; absent on the last page."""


class SuiteLine(_Open):
    """One suite version in the host's listing (`/host/wopeval/suites`)."""

    suiteId: str
    """The suite."""
    version: str
    """The version."""
    scope: str | None = None
    """`tenant` (the caller's own) or `host`."""
    taskCount: int | None = None
    """Its tasks."""
    fixtureId: str | None = None
    """The fixture id a host suite is also known by."""


class SuiteListing(_Open):
    """The caller's suites, then the host's."""

    suites: list[SuiteLine] = []
    """Every suite version the caller may run."""


class LiveCalls(_Open):
    """`/host/wopeval/runs/{id}/live-calls`: what of the run reached the outside world."""

    liveCalls: JsonValue = None
    """Tool calls that reached a live tool (a count; anything else: the host cannot say)."""


class CallerTenant(_Open):
    """`/host/wopeval/principal`: the caller as the host sees its key."""

    tenant: str
    """The caller's tenant."""
