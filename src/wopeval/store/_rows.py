"""Row dicts from the store's row dataclasses."""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


def shallow_fields(row: DataclassInstance) -> dict[str, Any]:
    """A dataclass's fields as a dict whose values are shared, not copied.

    `dataclasses.asdict` deep-copies every JSON value (a tool's result, a trial's
    whole detail) on the hot path of every step; the insert only reads them.
    """
    return {field.name: getattr(row, field.name) for field in fields(row)}
