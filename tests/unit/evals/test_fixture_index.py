"""`FixtureCursor`'s index: `exact` entries found by their args' canonical form.

The cursor must choose as `select_entry` does (docs/design.md §3, "The fixture matcher";
RFC 0252 §D: "RFC 0244 §D selection, consumption and per-trial reset apply unchanged"):
the first unconsumed entry, in list order, whose tool equals the call's and whose args
match, `exact` meaning RFC 8785 canonical equality. These tests hold the index to that
rule where a key could part from it: numbers JCS writes alike, key order, values JCS
cannot write, pattern entries before and after an `exact` one, used-up entries, resets.
"""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import JsonValue

from wopeval import evals
from wopeval.engine.recording.boundary import FixtureServer, ToolCall
from wopeval.evals import _matcher
from wopeval.evals._canonical import canonical_form
from wopeval.wire import json_text
from wopeval.wire.suite import ToolResponse


def entry(args: JsonValue, response: JsonValue = "r", **fields: Any) -> ToolResponse:
    document = {"tool": "a:t", "args": args, "response": response, **fields}
    return ToolResponse.model_validate(document)


def served(cursor: evals.FixtureCursor, args: JsonValue, tool: str = "a:t") -> int | None:
    """The index of the entry that served the call, handed its args' text as the boundary
    hands it; None for a miss."""
    outcome = cursor.serve(tool, args, json_text.written(args))
    return outcome.index if isinstance(outcome, evals.Served) else None


def test_numbers_jcs_writes_alike_match_and_a_boolean_is_no_number() -> None:
    cursor = evals.FixtureCursor.of([entry({"n": 1}), entry({"n": 2.5})], "fail")
    assert served(cursor, {"n": True}) is None
    assert served(cursor, {"n": 1.0}) == 0
    assert served(cursor, {"n": 2.50}) == 1


def test_key_order_does_not_matter_and_a_missing_member_does() -> None:
    cursor = evals.FixtureCursor.of([entry({"a": 1, "b": [1, {"y": 2, "x": 1}]})], "fail")
    assert served(cursor, {"b": [1, {"x": 1, "y": 2}]}) is None
    assert served(cursor, {"b": [1, {"x": 1, "y": 2}], "a": 1}) == 0


def test_args_whose_python_hashes_collide_are_told_apart() -> None:
    # hash(-1) == hash(-2) in CPython: the index keys on the whole canonical form.
    cursor = evals.FixtureCursor.of([entry({"n": -1}, "one"), entry({"n": -2}, "two")], "fail")
    assert served(cursor, {"n": -2}) == 1
    assert served(cursor, {"n": -1}) == 0


def test_equal_entries_serve_in_list_order_until_used_up() -> None:
    cursor = evals.FixtureCursor.of([entry({"k": 1}), entry({"k": 2}), entry({"k": 1.0})], "fail")
    assert [served(cursor, {"k": 1}) for _ in range(3)] == [0, 2, None]
    assert cursor.miss_count == 1
    assert cursor.consumed == frozenset({0, 2})


def test_an_earlier_pattern_entry_comes_before_an_exact_one() -> None:
    entries = [entry({"k": 1}, argsMatch="subset"), entry({"k": 1, "j": 0})]
    cursor = evals.FixtureCursor.of(entries, "fail")
    assert served(cursor, {"j": 0, "k": 1}) == 0
    assert served(cursor, {"j": 0, "k": 1}) == 1
    assert served(cursor, {"j": 0, "k": 1}) is None


def test_a_later_pattern_entry_waits_for_the_exact_one() -> None:
    cursor = evals.FixtureCursor.of([entry({"k": 1}), entry(None, argsMatch="ignore")], "fail")
    assert served(cursor, {"k": 1}) == 0
    assert served(cursor, {"k": 1}) == 1


def test_args_jcs_cannot_write_match_by_equality_and_nothing_else() -> None:
    # 2**60 is beyond the integers JCS holds: no canonical form, so no index key.
    entries = [entry({"id": 2**60}), entry({"id": 2.0**60}), entry({"id": 1})]
    cursor = evals.FixtureCursor.of(entries, "fail")
    assert served(cursor, {"id": 2**60 + 1}) is None
    assert served(cursor, {"id": 2**60}) == 0
    assert served(cursor, {"id": 2.0**60}) == 1
    assert served(cursor, {"id": 2**60}) is None
    assert cursor.miss_count == 2


def test_a_miss_fails_closed_and_a_reset_serves_every_entry_again() -> None:
    cursor = evals.FixtureCursor.of([entry({"k": 1}), entry({"k": 1})], "fail")
    assert [served(cursor, {"k": 1}) for _ in range(2)] == [0, 1]
    missed = cursor.serve("a:t", {"k": 1})
    assert isinstance(missed, evals.Missed)
    assert missed.detail.consumed_for_tool == 2
    assert served(cursor, {"k": 1}, tool="a:other") is None
    assert cursor.miss_count == 2
    cursor.reset()
    assert (cursor.miss_count, cursor.consumed) == (0, frozenset())
    assert [served(cursor, {"k": 1}) for _ in range(2)] == [0, 1]


def test_a_call_served_by_its_form_carries_its_args_hash() -> None:
    cursor = evals.FixtureCursor.of([entry({"n": 1}), entry(None, argsMatch="ignore")], "fail")
    by_form = cursor.serve("a:t", {"n": 1.0})
    by_pattern = cursor.serve("a:t", {"n": 3.0})
    assert isinstance(by_form, evals.Served)
    assert by_form.args_hash == evals.args_hash({"n": 1.0}) == evals.args_hash({"n": 1})
    assert isinstance(by_pattern, evals.Served)
    assert by_pattern.args_hash is None
    call = evals.ExecutedCall("a:t", {"n": 3.0}, args_hash=by_pattern.args_hash)
    assert call.hashed_args() == evals.args_hash({"n": 3})


# Values that JCS writes alike or not: numbers of both kinds, booleans, key orders, values
# beyond JCS, non-ASCII keys; few of them, so that calls often hit and entries repeat.
_scalars = st.sampled_from([0, 1, 1.0, -0.0, True, False, None, 2**60, 2.0**60, "1", "é"])
_values = st.one_of(
    _scalars,
    st.lists(_scalars, max_size=2),
    st.dictionaries(st.sampled_from(["a", "b", "é"]), _scalars, max_size=2),
)
_entries = st.lists(
    st.tuples(
        st.sampled_from(["a:x", "a:y"]), _values, st.sampled_from(["exact", "subset", "ignore"])
    ).map(
        lambda t: ToolResponse.model_validate(
            {"tool": t[0], "args": t[1], "argsMatch": t[2], "response": "r"}
        )
    ),
    max_size=8,
)
_calls = st.lists(st.tuples(st.sampled_from(["a:x", "a:y"]), _values), max_size=12)


@given(_entries, _calls, st.integers(min_value=1, max_value=2), st.booleans())
def test_the_index_chooses_as_select_entry_does(
    entries: list[ToolResponse],
    calls: list[tuple[str, JsonValue]],
    trials: int,
    with_texts: bool,
) -> None:
    # With the calls' texts (as the boundary hands them) and without (the forms only).
    cursor = evals.FixtureCursor.of(entries, "fail")
    for _ in range(trials):
        cursor.reset()
        consumed: set[int] = set()
        for tool, args in calls:
            expected = evals.select_entry(entries, frozenset(consumed), tool, args)
            outcome = cursor.serve(tool, args, json_text.written(args) if with_texts else None)
            if isinstance(expected, evals.FixtureHit):
                assert isinstance(outcome, evals.Served)
                assert outcome.index == expected.index
                if outcome.args_hash is not None:
                    assert outcome.args_hash == evals.args_hash(args)
                consumed.add(expected.index)
            else:
                assert isinstance(outcome, evals.Missed)
            assert cursor.consumed == consumed


def test_a_value_has_no_canonical_form_wherever_jcs_refuses_it() -> None:
    # orjson writes 64-bit integers; JCS holds ±(2**53 - 1), in an object member too.
    for beyond in (2**53, -(2**53), 2**60):
        assert canonical_form(beyond) is None
        assert canonical_form({"n": beyond}) is None
        assert canonical_form([{"n": [beyond]}]) is None
    assert canonical_form({"n": 2**53 - 1, "m": [-(2**53) + 1]}) == (
        b'{"m":[-9007199254740991],"n":9007199254740991}'
    )
    assert canonical_form({"n": float("nan")}) is None
    assert canonical_form({"s": "\ud800"}) is None


def test_the_boundary_hands_the_matcher_s_args_hash_on() -> None:
    entries = [entry({"n": 1}), entry({"n": 2}, {"code": "boom"}, isError=True)]
    server = FixtureServer(evals.FixtureCursor.of(entries, "fail"))
    ok = server.serve(ToolCall("a:t", {"n": 1.0}, "c1"))
    failed = server.serve(ToolCall("a:t", {"n": 2}, "c2"))
    missed = server.serve(ToolCall("a:t", {"n": 1}, "c3"))
    assert ok is not None
    assert ok.args_hash == evals.args_hash({"n": 1})
    assert failed is not None
    assert (failed.status, failed.args_hash) == ("error", evals.args_hash({"n": 2}))
    assert missed is not None
    assert missed.fixture_miss
    assert missed.args_hash is None


def test_calls_in_the_entries_order_are_served_without_writing_a_form(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The entries' forms and hashes are written with the index (once a suite version);
    # a call written as its entry was is served by its text, its form not written.
    entries = [entry({"n": 1, "q": "a"}), entry({"n": 1, "q": "a"}), entry({"n": 2})]
    cursor = evals.FixtureCursor.of(entries, "fail")
    written: list[JsonValue] = []

    def counted(value: JsonValue) -> bytes | None:
        written.append(value)
        return canonical_form(value)

    monkeypatch.setattr(_matcher, "canonical_form", counted)
    for trial in range(2):
        cursor.reset()
        calls: list[JsonValue] = [{"n": 1, "q": "a"}, {"n": 1, "q": "a"}, {"n": 2}]
        for args in calls:
            outcome = cursor.serve("a:t", args, json_text.written(args))
            assert isinstance(outcome, evals.Served)
            assert outcome.args_hash == evals.args_hash(args)
        assert cursor.consumed == frozenset({0, 1, 2}), trial
    assert written == []


def test_a_call_out_of_the_entries_order_or_written_otherwise_is_served_by_its_form() -> None:
    entries = [entry({"a": 1, "b": 2}), entry({"n": 1}), entry({"n": 1.0})]
    cursor = evals.FixtureCursor.of(entries, "fail")
    # Another key order: another text, the same value.
    swapped: JsonValue = {"b": 2, "a": 1}
    assert served(cursor, {"n": 1}) == 1
    assert served(cursor, swapped) == 0
    # The first unconsumed entry's text is not the call's: the form finds the later one.
    assert served(cursor, {"n": 1}) == 2
    assert served(cursor, {"n": 1}) is None


def test_cursors_over_one_index_each_consume_their_own_entries() -> None:
    # One index serves every trial of every run of a suite version at once
    # (`KeptSuite.fixture_indexes`): what a trial consumed is its cursor's alone.
    index = evals.FixtureIndex([entry({"k": 1}), entry({"k": 1}), entry({"k": 2})], "fail")
    one, two = evals.FixtureCursor(index), evals.FixtureCursor(index)
    assert served(one, {"k": 1}) == 0
    assert served(two, {"k": 1}) == 0
    assert served(two, {"k": 2}) == 2
    assert served(one, {"k": 1}) == 1
    assert served(one, {"k": 1}) is None
    assert (one.consumed, one.miss_count) == (frozenset({0, 1}), 1)
    assert (two.consumed, two.miss_count) == (frozenset({0, 2}), 0)
    assert served(two, {"k": 1}) == 1


def test_an_index_holds_its_texts_at_their_length() -> None:
    # An index lives as long as its suite version is kept: the bytes orjson returns keep
    # a ~4 KiB buffer each, so an index of their texts held ~12 KiB an entry.
    entries = [entry({"n": n}, {"value": n}) for n in range(200)]
    tracemalloc.start()
    try:
        index = evals.FixtureIndex(entries, "fail")
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert index.answers[7] == b'{"value":7}'
    assert index.texts["a:t"][7] == (7, b'{"n":7}')
    assert index.forms[7] == b'{"n":7}'
    assert held < len(entries) * 2048
