"""Model-miss analysis: the recorded request a model request that missed came nearest.

A model miss means no unconsumed recorded answer of the request's wire API
has its hash. What a user needs to know is what the agent now sends that it
did not before. This host's rule: the nearest recorded request is, among the
unconsumed recorded answers of the same API, the one at the same position in
its invocation (the source's exchange N for the agent's exchange N), else the
one with the fewest differing paths; ties go to the first in recording order.
Its diff runs from the recorded request (`expected`) to the one sent
(`actual`), both canonical.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from wopeval.evals._grade import describe_changes
from wopeval.evals._jsondiff import PathChange, json_diff
from wopeval.evals._model_fixture import ModelFixture

SHOWN_PATHS = 3
"""Paths a content-free reason names before `and N more`."""


@dataclass(frozen=True, slots=True)
class ModelMiss:
    """A model request no recorded answer served, beside the recorded request it came nearest."""

    ordinal: int
    """The request's position among its invocation's exchanges, from 0 (what replay matches
    recorded positions by)."""
    index: int
    """Its position among the trial's model exchanges, from 0: the number the task detail's
    `modelCalls`, `explain`, the reports and the dashboard give it (docs/decisions.md)."""
    nearest_ordinal: int | None
    """The nearest recorded request's position in its own invocation; None when no recorded
    answer of the API is left."""
    nearest_hash: str | None
    diff: tuple[PathChange, ...]
    """Paths from the recorded request to the one sent (empty when the recording kept no
    request to compare with)."""
    consumed: int
    """Recorded answers of the API already served in this trial."""

    @property
    def reason(self) -> str:
        """One line without content (paths only): for any wire content mode."""
        return f"{_LEAD} (model exchange {self.index}); {self.nearest_reason}"

    @property
    def nearest_reason(self) -> str:
        """The nearest recorded request and the paths that differ from it (no values)."""
        if self.nearest_hash is None:
            return f"no recorded answer is left ({self.consumed} served)"
        text = f"nearest recorded request: exchange {self.nearest_ordinal}"
        paths = [change.path for change in self.diff]
        if not paths:
            return text
        shown = ", ".join(paths[:SHOWN_PATHS])
        if len(paths) > SHOWN_PATHS:
            shown += f" and {len(paths) - SHOWN_PATHS} more"
        noun = "path differs" if len(paths) == 1 else "paths differ"
        return f"{text}, {len(paths)} {noun}: {shown}"

    def described(self) -> str:
        """The reason with the differing values, shortened (for the agent that sent it)."""
        if not self.diff:
            return self.reason
        changes = describe_changes(self.diff, expected="recorded", actual="sent")
        return (
            f"{_LEAD} (model exchange {self.index}); nearest recorded "
            f"request: exchange {self.nearest_ordinal}, {changes}"
        )

    def to_json(self) -> dict[str, Any]:
        """`{reason, nearestReason, nearest: {ordinal, requestHash} | null, diff}`."""
        nearest = None
        if self.nearest_hash is not None:
            nearest = {"ordinal": self.nearest_ordinal, "requestHash": self.nearest_hash}
        return {
            "reason": self.reason,
            "nearestReason": self.nearest_reason,
            "nearest": nearest,
            "diff": [change.to_json() for change in self.diff],
        }


_LEAD = "model replay: the source run made no request like this one"


def nearest_request(
    fixtures: Sequence[ModelFixture],
    consumed: frozenset[int],
    api: str,
    request: JsonValue,
    ordinal: int,
    index: int,
) -> ModelMiss:
    """The nearest unconsumed recorded request of `api` to one that missed, with the diff."""
    best: tuple[tuple[bool, int, int], ModelFixture, list[PathChange]] | None = None
    for position, fixture in enumerate(fixtures):
        # Only an unconsumed answer of the same API could have served the request.
        if position in consumed or fixture.api != api:
            continue
        changes = [] if fixture.request is None else json_diff(fixture.request, request)
        # The same position first, then the fewest differing paths, then recording order.
        key = (fixture.ordinal != ordinal, len(changes), position)
        if best is None or key < best[0]:
            best = (key, fixture, changes)
    used = sum(1 for position in consumed if fixtures[position].api == api)
    if best is None:
        return ModelMiss(ordinal, index, None, None, (), used)
    _, fixture, changes = best
    return ModelMiss(ordinal, index, fixture.ordinal, fixture.request_hash, tuple(changes), used)
