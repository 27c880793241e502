"""Fixture-miss analysis: which recorded entry a call that missed was closest to, and how.

A miss means no unconsumed entry matched the call (RFC 0244 §D selection, see
`_matcher.select_entry`). What a user needs to know is what the agent did
differently: the closest unconsumed entry for the same tool and the argument
paths that keep it from matching. This host's rule (docs/decisions.md):
closest means the fewest differing argument paths, ties going to the first
entry in list order; only unconsumed entries count, as only they could have
served the call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from wopeval.evals._grade import describe_changes
from wopeval.evals._jsondiff import PathChange, json_diff, subset_diff
from wopeval.wire.suite import ToolResponse


@dataclass(frozen=True, slots=True)
class MissDetail:
    """A call no unconsumed entry served, beside the entry it came closest to."""

    tool: str
    args: JsonValue
    """The args the agent passed."""
    closest_index: int | None
    """The closest entry's position in the task's `toolResponses`; None when no unconsumed
    entry names `tool`."""
    closest_args: JsonValue
    """That entry's `args` (what was recorded); None when there is no such entry."""
    diff: tuple[PathChange, ...]
    """Argument paths from the entry's args (`expected`) to the call's (`actual`): `added` paths
    are the call's only, `removed` the entry's only."""
    consumed_for_tool: int
    """Entries for `tool` already consumed in this trial: a repeat of a recorded call misses
    once each of them is used."""

    @property
    def reason(self) -> str:
        """One line for a task detail or a report."""
        text = f"no unconsumed fixture matches this call to {self.tool}"
        if self.closest_index is None:
            return text + f"; none is left for this tool ({self.consumed_for_tool} consumed)"
        return (
            text
            + f"; closest: toolResponses[{self.closest_index}], "
            + describe_changes(self.diff, expected="recorded", actual="the call has")
        )

    def to_json(self) -> dict[str, Any]:
        """`{tool, args, closestIndex, closestArgs, diff, consumedForTool, reason}`."""
        return {
            "tool": self.tool,
            "args": self.args,
            "closestIndex": self.closest_index,
            "closestArgs": self.closest_args,
            "diff": [change.to_json() for change in self.diff],
            "consumedForTool": self.consumed_for_tool,
            "reason": self.reason,
        }


def closest_entry(
    entries: Sequence[ToolResponse], consumed: frozenset[int], tool: str, args: JsonValue
) -> MissDetail:
    """The closest unconsumed entry for `tool` to a call that missed, with the argument diff.

    The diff follows the entry's `argsMatch`: under `exact` every differing
    path counts; under `subset` only paths the entry names (extra args are
    allowed there). An `ignore` entry matches any args of its tool, so an
    unconsumed one never sits beside a miss.
    """
    best: tuple[int, list[PathChange]] | None = None
    for index, entry in enumerate(entries):
        # Only an unconsumed entry for the same tool could have served the call.
        if index in consumed or entry.tool != tool:
            continue
        changes = _args_changes(entry, args)
        # Fewest differing paths; a tie keeps the earlier entry, as selection prefers list order.
        if best is None or len(changes) < len(best[1]):
            best = (index, changes)
    used = sum(1 for index in consumed if entries[index].tool == tool)
    if best is None:
        return MissDetail(tool, args, None, None, (), used)
    index, changes = best
    return MissDetail(tool, args, index, entries[index].args, tuple(changes), used)


def _args_changes(entry: ToolResponse, args: JsonValue) -> list[PathChange]:
    if entry.args_match == "subset":
        return subset_diff(entry.args, args)
    # `exact`: an unconsumed `ignore` entry would have served the call, so it is never here.
    return json_diff(entry.args, args)
