"""The run-event envelope shared by every event family (events.md §The envelope)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, JsonValue

AnyJson = Any
"""Tool and agent content inside a payload: any JSON, produced by the host itself.

It is not re-validated on the way out: it already passed the tool boundary as
JSON, and walking every value again would cost more than the rest of the event.
"""

SCHEMA_VERSION = 1
"""`schemaVersion` written on every event this host emits."""

EVENT_LOG_SCHEMA_VERSION = 3
"""`eventLogSchemaVersion` of a v2 log (versioning.md §2.2)."""


class Payload(BaseModel):
    """A closed event payload; `x-` keys ride the vendor hatch (RFC 0185)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    TYPE: ClassVar[str]
    """The v2 event type this payload belongs to."""

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class EventDoc(BaseModel):
    """A RunEventDoc as read back from the wire (closed envelope)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    eventId: str
    """Opaque, host-minted event id."""
    runId: str
    """The bound run id."""
    type: str
    """The v2 event type (`domain.verb-ed`)."""
    payload: JsonValue
    """The type's payload."""
    timestamp: str
    """ISO 8601 emission time."""
    sequence: int
    """Position in the run's log, from 0 with no gaps."""
    schemaVersion: int
    """Payload schema version."""
    nodeId: str | None = None
    """The node the event belongs to, if any."""
    causationId: str | None = None
    """The event that caused this one, if any."""
