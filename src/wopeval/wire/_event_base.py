"""The run-event envelope shared by every event family (events.md §The envelope)."""

from __future__ import annotations

from dataclasses import dataclass
from types import UnionType
from typing import Any, ClassVar, Literal, Union, get_args, get_origin

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

    _WIRE_KEYS: ClassVar[tuple[tuple[str, str], ...] | None] = None
    """Each field and its wire key, when every field is written as it is held (below)."""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        fields = cls.model_fields
        written_as_held = all(_written_as_held(field.annotation) for field in fields.values())
        cls._WIRE_KEYS = (
            tuple((name, field.alias or name) for name, field in fields.items())
            if written_as_held
            else None
        )

    def to_wire(self) -> dict[str, Any]:
        """The payload as the event carries it: pydantic's JSON-mode dump, by alias,
        without unset optionals.

        A payload whose fields hold strings, integers, booleans and JSON content (and
        payloads of the same kind) is all JSON already, so its dump is its fields as held:
        built here, a third of pydantic's walk, which also copies every value. That
        sharing is safe because content is the host's own by then: the tool boundary
        keeps a copy of what an agent passes and returns (engine/recording/invocation.py).
        """
        keys = self._WIRE_KEYS
        if keys is None:
            return self.model_dump(mode="json", by_alias=True, exclude_none=True)
        held = self.__dict__
        wire: dict[str, Any] = {}
        for name, key in keys:
            value = held[name]
            if value is not None:
                wire[key] = value.to_wire() if isinstance(value, Payload) else value
        return wire


@dataclass(slots=True)
class Built:
    """A payload's wire form (`Payload.to_wire`) built by the host itself, for the events of
    every tool call (engine/recording/content.py), every invocation's bracket and every
    task's score: values its types already guarantee need no validation, and pydantic's
    check of each field, then its walk back out, cost those events more than the rest of
    their emit. Not frozen: its `wire` is a dict that freezing would not protect, and a
    frozen dataclass sets each field through `object.__setattr__` (a third of its cost,
    on two events a tool call)."""

    TYPE: str
    wire: dict[str, Any]

    def to_wire(self) -> dict[str, Any]:
        return self.wire


def _written_as_held(annotation: Any) -> bool:
    """Whether pydantic's JSON-mode dump of a value of this type is the value itself."""
    if annotation is Any or annotation in (str, int, bool, type(None)):
        return True
    if isinstance(annotation, type) and issubclass(annotation, Payload):
        return True
    origin, arguments = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return all(type(argument) is str for argument in arguments)
    if origin in (Union, UnionType, list):
        return all(_written_as_held(argument) for argument in arguments)
    if origin is dict:
        return arguments[0] is str and _written_as_held(arguments[1])
    return False


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
