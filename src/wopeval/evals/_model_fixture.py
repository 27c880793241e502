"""A recorded model answer kept as a replay fixture, and the API an old recording used.

Apart from `_models.py` so the miss report (`_model_miss.py`), which `_models.py` calls,
reads fixtures without importing its caller.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

DEFAULT_API = "chat"
"""The wire API of an exchange recorded before the host served more than one."""


@dataclass(frozen=True, slots=True)
class ModelFixture:
    """A recorded answer served to the request of the same API with the same hash."""

    request_hash: str
    response: JsonValue
    api: str = DEFAULT_API
    request: JsonValue = None
    """The canonical request it answered (None in a copy kept before requests were)."""
    ordinal: int | None = None
    """Its exchange's position in its invocation, from 0."""

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "requestHash": self.request_hash,
            "response": self.response,
            "api": self.api,
            "request": self.request,
            "ordinal": self.ordinal,
        }

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> ModelFixture:
        ordinal = document.get("ordinal")
        return cls(
            str(document["requestHash"]),
            document["response"],
            str(document.get("api") or DEFAULT_API),
            document.get("request"),
            ordinal if isinstance(ordinal, int) else None,
        )
