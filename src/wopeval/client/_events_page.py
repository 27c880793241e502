"""One answer of the events poll, apart from the other answers: it holds the event
envelope's models (`wire.events`), which a listing never reads (issue 28)."""

from __future__ import annotations

from pydantic import Field

from wopeval.client._answers import _Open
from wopeval.wire.events import EventDoc


class EventsPage(_Open):
    """One answer of `GET /runs/{id}/events/poll` (events.md §Poll)."""

    events: list[EventDoc] = Field(default_factory=list)
    """The events after the asked sequence, in order."""
    status: str | None = None
    """The run's status as of `lastSequence`."""
    lastSequence: int = -1
    """The last sequence the run had logged."""
    isTerminal: bool = False
    """Whether the run had ended."""
