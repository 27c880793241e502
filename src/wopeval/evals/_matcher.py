"""The fixture matcher (RFC 0244 §D as docs/design.md §3 defines it).

Selection is a pure function (`select_entry`): the first unconsumed entry, in
list order, whose `tool` equals the call's tool and whose args match. The
consume-once state and the miss count live in a small holder (`FixtureCursor`)
that the engine owns, one per task trial (STYLE.md G5). A miss carries its
analysis (`_miss.closest_entry`): the entry the call came closest to.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import JsonValue

from wopeval.evals._canonical import json_equal
from wopeval.evals._miss import MissDetail, closest_entry
from wopeval.wire.suite import ArgsPattern, OnMiss, ToolResponse


def args_match(pattern: ArgsPattern, args: JsonValue) -> bool:
    """Whether a call's `args` satisfy an entry's (or an expected call's) args pattern.

    docs/design.md §3: `exact` is RFC 8785 canonical equality, `subset` means the
    pattern's args are a recursive subset of the call's, `ignore` takes any args.
    """
    mode = pattern.args_match
    if mode == "ignore":
        return True
    if mode == "exact":
        return json_equal(pattern.args, args)
    return is_json_subset(pattern.args, args)


def is_json_subset(part: JsonValue, whole: JsonValue) -> bool:
    """Objects: every key of `part` is in `whole` with a subset value; else canonical equality."""
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(
            key in whole and is_json_subset(value, whole[key]) for key, value in part.items()
        )
    return json_equal(part, whole)


@dataclass(frozen=True, slots=True)
class FixtureHit:
    """The entry at `index` serves the call."""

    index: int
    entry: ToolResponse


@dataclass(frozen=True, slots=True)
class FixtureMiss:
    """No unconsumed entry matches the call."""


def select_entry(
    entries: Sequence[ToolResponse],
    consumed: frozenset[int],
    tool: str,
    args: JsonValue,
) -> FixtureHit | FixtureMiss:
    """RFC 0244 §D selection (docs/design.md §3): first unconsumed match in list order."""
    for index, entry in enumerate(entries):
        # "each entry serves one call": a consumed entry is never offered again.
        if index in consumed:
            continue
        # "whose `tool` equals the call's tool and whose args match".
        if entry.tool == tool and args_match(entry, args):
            return FixtureHit(index=index, entry=entry)
    return FixtureMiss()


@dataclass(frozen=True, slots=True)
class Served:
    """Answer the call with `entry` (its `response`, as an error when `isError`)."""

    index: int
    """The entry's position in the task's `toolResponses`."""
    entry: ToolResponse


@dataclass(frozen=True, slots=True)
class Missed:
    """Fail-closed miss: run nothing live, answer `fixture_miss`, fail the task."""

    detail: MissDetail
    """The closest unconsumed entry for the tool, and how the call's args differ from it."""


@dataclass(frozen=True, slots=True)
class GoLive:
    """`onMiss: live`: the call missed and runs against the live tool."""

    detail: MissDetail
    """As for `Missed`: why no entry served the call."""


class FixtureCursor:
    """One task's fixtures through one trial: consume-once and the miss count.

    The engine builds one per task and calls `reset()` at the start of each
    trial ("consumption resets at each trial", docs/design.md §3); it reads
    `miss_count` for the trial's outcome before resetting.
    """

    def __init__(self, entries: Sequence[ToolResponse], on_miss: OnMiss) -> None:
        self._entries = tuple(entries)
        self._on_miss = on_miss
        self._consumed: frozenset[int] = frozenset()
        self.miss_count = 0
        """Misses under `onMiss: fail` since the last reset."""

    def serve(self, tool: str, args: JsonValue) -> Served | Missed | GoLive:
        """Select and consume the entry for this call, or say what a miss means."""
        outcome = select_entry(self._entries, self._consumed, tool, args)
        if isinstance(outcome, FixtureHit):
            self._consumed |= {outcome.index}
            return Served(index=outcome.index, entry=outcome.entry)
        detail = closest_entry(self._entries, self._consumed, tool, args)
        # "Miss under `live`: the live tool runs" (wire digest §2.1); it is not counted.
        if self._on_miss == "live":
            return GoLive(detail)
        # "A miss under `fail` runs nothing live ... counts in `fixtureMissCount`".
        self.miss_count += 1
        return Missed(detail)

    def reset(self) -> None:
        """Start a new trial: every entry is unconsumed again and no miss is counted."""
        self._consumed = frozenset()
        self.miss_count = 0

    @property
    def consumed(self) -> frozenset[int]:
        """Indexes of entries served since the last reset."""
        return self._consumed
