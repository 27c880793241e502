"""Every event payload is written as pydantic's JSON-mode dump writes it (wire/_event_base.py):
those whose fields are held as JSON already are built from their fields, the others dumped.
Each payload class is checked with every field set and with every optional field unset."""

from __future__ import annotations

from collections.abc import Iterator
from types import NoneType, UnionType
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

import pytest
from pydantic import BaseModel

from wopeval.wire import events
from wopeval.wire._event_base import Payload

CONTENT = {"list": [1, None, "x", 1.5, {"deep": None}], "none": None, "flag": False}
"""Content as an agent or a tool gives it: a null inside it stays, it is not an unset field."""


def _payload_classes(base: type[Payload] = Payload) -> Iterator[type[Payload]]:
    for subclass in base.__subclasses__():
        yield subclass
        yield from _payload_classes(subclass)


Model = TypeVar("Model", bound=BaseModel)

PAYLOADS = sorted(_payload_classes(), key=lambda cls: cls.__name__)


def _value(annotation: Any, *, optional_set: bool) -> Any:
    origin, arguments = get_origin(annotation), get_args(annotation)
    if origin in (Union, UnionType):
        if NoneType in arguments and not optional_set:
            return None
        return _value(next(a for a in arguments if a is not NoneType), optional_set=optional_set)
    if origin is Literal:
        return arguments[0]
    if origin is list:
        return [_value(arguments[0], optional_set=optional_set)]
    if origin is dict:
        value = {"key": _value(arguments[1], optional_set=optional_set)}
        return {**value, "none": None} if arguments[1] is Any else value
    if annotation is Any:
        return CONTENT
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        # A payload, or a wire model a payload holds (the run owner).
        return _instance(annotation, optional_set=optional_set)
    samples: dict[Any, Any] = {str: "text", int: 3, bool: True, float: 0.25}
    return samples[annotation]


def _instance(cls: type[Model], *, optional_set: bool) -> Model:
    values = {
        name: _value(field.annotation, optional_set=optional_set)
        for name, field in cls.model_fields.items()
    }
    return cls.model_validate(values)


def test_every_payload_class_of_the_events_module_is_checked() -> None:
    exported = {
        value
        for value in vars(events).values()
        if isinstance(value, type) and issubclass(value, Payload) and value is not Payload
    }
    assert exported <= set(PAYLOADS)
    assert {events.ToolCalled, events.ToolReturned, events.Decided} <= {
        cls for cls in PAYLOADS if cls._WIRE_KEYS is not None
    }


@pytest.mark.parametrize("optional_set", [True, False], ids=["all-set", "optionals-unset"])
@pytest.mark.parametrize("cls", PAYLOADS, ids=lambda cls: cls.__name__)
def test_a_payload_is_written_as_its_json_mode_dump(cls: type[Payload], optional_set: bool) -> None:
    payload = _instance(cls, optional_set=optional_set)
    dumped = payload.model_dump(mode="json", by_alias=True, exclude_none=True)
    written = payload.to_wire()
    assert written == dumped
    assert list(written) == list(dumped)
