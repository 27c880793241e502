"""The fixture matcher (RFC 0244 §D as docs/design.md §3 defines it).

Selection is a pure function (`select_entry`): the first unconsumed entry, in
list order, whose `tool` equals the call's tool and whose args match. The
consume-once state and the miss count live in a small holder (`FixtureCursor`)
that the engine owns, one per task trial (STYLE.md G5). A miss carries its
analysis (`_miss.closest_entry`): the entry the call came closest to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import JsonValue

from wopeval.evals._canonical import canonical_form, hash_of_form, json_equal
from wopeval.evals._miss import MissDetail, closest_entry
from wopeval.wire.json_text import kept, written
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


@dataclass(slots=True)
class Served:
    """Answer the call with `entry` (its `response`, as an error when `isError`).

    Not frozen: one is built for every fixture-served call, and a frozen dataclass takes
    three times as long to build; its one reader takes it apart at once."""

    index: int
    """The entry's position in the task's `toolResponses`."""
    entry: ToolResponse
    args_hash: str | None = None
    """The call's `argsHash`, when an `exact` entry of the call's canonical form served it
    (the entry's, the same); None otherwise."""
    answer_text: bytes | None = None
    """The entry's `response` as `json_text.written` writes it (None: it cannot)."""


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


class FixtureIndex:
    """What selection needs of one task's entries, written once: never changed after it is
    built, so one index serves every trial of every run of a suite version at once (the
    catalog keeps it with the parsed version, `ParsedSuites`), each trial's consumption
    in its own `FixtureCursor`.

    An `exact` entry matches exactly the calls whose args have its canonical form (RFC
    8785, docs/design.md §3), so the `exact` entries of a tool are kept by that form, each
    form's in list order, and a call's candidate among them is one lookup, not a comparison
    with each entry. The other entries of the tool (`subset`, `ignore`, and an `exact` one
    whose args JCS cannot write, `canonical_form`) are asked in list order as `select_entry`
    asks them, only before that candidate.

    Each `exact` entry's args are also kept as `json_text.written` writes them: an agent that
    makes its calls in the entries' order (a replay of the run they were recorded from, the
    conformance agent) makes each call with the args of the tool's first unconsumed `exact`
    entry, written alike (the text the boundary copied the call's args through). The same
    text is the same value, so that entry is the first of the call's form, and is served
    without the call's form written: its form, `argsHash` and answer text are the entry's,
    written here once.
    """

    __slots__ = ("answers", "by_form", "entries", "forms", "hashes", "on_miss", "patterns", "texts")

    def __init__(self, entries: Sequence[ToolResponse], on_miss: OnMiss) -> None:
        self.entries = tuple(entries)
        self.on_miss: OnMiss = on_miss
        texts: dict[str, list[tuple[int, bytes | None]]] = {}
        by_form: dict[str, dict[bytes, list[int]]] = {}
        patterns: dict[str, list[int]] = {}
        forms: list[bytes | None] = []
        # Every text kept is copied to its own length (`kept`): an index lives as long as
        # its suite version is kept.
        for index, entry in enumerate(self.entries):
            form = kept(canonical_form(entry.args)) if entry.mode() == "exact" else None
            forms.append(form)
            if form is None:
                patterns.setdefault(entry.tool, []).append(index)
                continue
            by_form.setdefault(entry.tool, {}).setdefault(form, []).append(index)
            texts.setdefault(entry.tool, []).append((index, kept(written(entry.args))))
        self.forms: tuple[bytes | None, ...] = tuple(forms)
        """By entry: its args' canonical form, for an `exact` entry JCS can write."""
        self.hashes: tuple[str | None, ...] = tuple(
            None if form is None else hash_of_form(form) for form in forms
        )
        """By entry: the `argsHash` of its form."""
        self.answers: tuple[bytes | None, ...] = tuple(
            None if entry.is_error else kept(written(entry.response)) for entry in self.entries
        )
        """By entry: its `response`'s text, for an entry that answers with it."""
        self.texts: Mapping[str, tuple[tuple[int, bytes | None], ...]] = {
            tool: tuple(indexed) for tool, indexed in texts.items()
        }
        """By tool: the `exact` entries with forms, in list order, with their args' text."""
        self.by_form: Mapping[str, Mapping[bytes, tuple[int, ...]]] = {
            tool: {form: tuple(indexes) for form, indexes in forms_of.items()}
            for tool, forms_of in by_form.items()
        }
        """By tool, then by form: the `exact` entries with forms, in list order."""
        self.patterns: Mapping[str, tuple[int, ...]] = {
            tool: tuple(indexes) for tool, indexes in patterns.items()
        }
        """By tool: the other entries, in list order."""


class FixtureCursor:
    """One task's fixtures through one trial: consume-once and the miss count.

    The engine builds one per task and calls `reset()` at the start of each
    trial ("consumption resets at each trial", docs/design.md §3); it reads
    `miss_count` for the trial's outcome before resetting.

    Selection is `select_entry`'s rule, found through the task's `FixtureIndex`, which the
    cursor only reads. Entries of one form are consumed in list order (the first unconsumed
    one is always the one served), so a form's consumed entries are counted, not searched.
    """

    def __init__(self, index: FixtureIndex) -> None:
        self._index = index
        self._consumed: set[int] = set()
        self.miss_count = 0
        """Misses under `onMiss: fail` since the last reset."""
        self._used: dict[tuple[str, bytes], int] = {}
        """How many entries of each (tool, form) this trial consumed: always the first ones."""
        self._front: dict[str, int] = {}
        """By tool: where in its `texts` its first unconsumed `exact` entry may be (every
        one before is consumed)."""

    @classmethod
    def of(cls, entries: Sequence[ToolResponse], on_miss: OnMiss) -> FixtureCursor:
        """A cursor over an index of its own, made of `entries`."""
        return cls(FixtureIndex(entries, on_miss))

    def serve(
        self, tool: str, args: JsonValue, args_text: bytes | None = None
    ) -> Served | Missed | GoLive:
        """Select and consume the entry for this call, or say what a miss means;
        `args_text` is `args` as `json_text.written` wrote them, when they were."""
        index = self._index
        found = self._select(tool, args, args_text)
        if found is not None:
            self._consumed.add(found)
            form = index.forms[found]
            if form is None:
                return Served(found, index.entries[found], None, index.answers[found])
            self._used[tool, form] = self._used.get((tool, form), 0) + 1
            return Served(found, index.entries[found], index.hashes[found], index.answers[found])
        consumed = frozenset(self._consumed)
        detail = closest_entry(index.entries, consumed, tool, args)
        # "Miss under `live`: the live tool runs" (wire digest §2.1); it is not counted.
        if index.on_miss == "live":
            return GoLive(detail)
        # "A miss under `fail` runs nothing live ... counts in `fixtureMissCount`".
        self.miss_count += 1
        return Missed(detail)

    def _select(self, tool: str, args: JsonValue, args_text: bytes | None) -> int | None:
        """`select_entry`'s choice."""
        index = self._index
        exact: int | None = None
        texts = index.texts.get(tool)
        if texts is not None:
            if args_text is not None:
                # The tool's first unconsumed `exact` entry, when its args' text is the
                # call's: then it is the first unconsumed entry of the call's form.
                position = self._front.get(tool, 0)
                while position < len(texts) and texts[position][0] in self._consumed:
                    position += 1
                self._front[tool] = position
                if position < len(texts) and texts[position][1] == args_text:
                    exact = texts[position][0]
            if exact is None:
                form = canonical_form(args)
                # Args JCS cannot write equal no indexed entry's (`canonical_form`), only
                # an `exact` entry's that JCS cannot write either: among the patterns.
                if form is not None:
                    indexes = index.by_form[tool].get(form, ())
                    used = self._used.get((tool, form), 0)
                    if used < len(indexes):
                        exact = indexes[used]
        for position in index.patterns.get(tool, ()):
            # Only an earlier entry comes first ("the first unconsumed entry, in list order").
            if exact is not None and position > exact:
                break
            if position not in self._consumed and args_match(index.entries[position], args):
                return position
        return exact

    def reset(self) -> None:
        """Start a new trial: every entry is unconsumed again and no miss is counted."""
        self._consumed = set()
        self._used = {}
        self._front = {}
        self.miss_count = 0

    @property
    def consumed(self) -> frozenset[int]:
        """Indexes of entries served since the last reset."""
        return frozenset(self._consumed)
