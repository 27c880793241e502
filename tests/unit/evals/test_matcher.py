"""`evals/_matcher.py` and `_canonical.py`: selection, consumption, args matching, JCS."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import JsonValue

from wopeval import evals
from wopeval.wire.suite import OnMiss, ToolResponse


def entry(tool: str = "acme:t", response: JsonValue = "r", **fields: Any) -> ToolResponse:
    return ToolResponse.model_validate({"tool": tool, "response": response, **fields})


class TestCanonicalJson:
    def test_key_order_does_not_matter(self) -> None:
        assert evals.canonical_json({"b": 1, "a": [1, 2]}) == b'{"a":[1,2],"b":1}'

    def test_args_hash_is_sha256_of_jcs(self) -> None:
        expected = "sha256:" + hashlib.sha256(b'{"key":"k","op":"inc"}').hexdigest()
        assert evals.args_hash({"op": "inc", "key": "k"}) == expected

    def test_args_hash_ignores_key_order(self) -> None:
        assert evals.args_hash({"a": 1, "b": 2}) == evals.args_hash({"b": 2, "a": 1})

    @pytest.mark.parametrize(
        ("left", "right", "equal"),
        [
            (1, 1.0, True),
            (True, 1, False),
            (None, False, False),
            ({"a": 1}, {"a": 1, "b": None}, False),
            ([1, 2], [2, 1], False),
            ("é", "é", True),
            (2**60, 2**60, True),
            (2**60, 2**60 + 1, False),
        ],
    )
    def test_json_equal(self, left: JsonValue, right: JsonValue, equal: bool) -> None:
        assert evals.json_equal(left, right) is equal

    def test_outside_jcs_domain_equal_values_in_another_key_order(self) -> None:
        # No canonical form exists; the sorted fallback text still sees them equal.
        assert evals.json_equal({"id": 2**60, "n": 1}, {"n": 1, "id": 2**60})

    def test_compact_json_is_canonical_where_jcs_can(self) -> None:
        assert evals.compact_json({"b": 1.0, "a": "é"}) == '{"a":"é","b":1}'

    def test_compact_json_outside_jcs_is_sorted_compact_and_unescaped(self) -> None:
        text = evals.compact_json({"id": 2**60, "name": "é", "list": [1, 2]})
        assert text == '{"id":1152921504606846976,"list":[1,2],"name":"é"}'

    def test_outside_jcs_domain_the_hash_is_the_sorted_texts(self) -> None:
        # JCS refuses 2**60 (an error for `canonical_json`); the hash is its compact text's.
        with pytest.raises(ValueError, match="exceeds safe integer domain"):
            evals.canonical_json(2**60)
        assert (
            evals.args_hash(2**60) == "sha256:" + hashlib.sha256(b"1152921504606846976").hexdigest()
        )


class TestArgsMatch:
    @pytest.mark.parametrize(
        ("pattern", "args", "matches"),
        [
            ({"args": {"op": "inc", "key": "k"}}, {"key": "k", "op": "inc"}, True),
            ({"args": {"op": "inc"}}, {"op": "inc", "key": "k"}, False),
            ({"args": {"n": 1}}, {"n": 1.0}, True),
            ({"args": {"n": 1}}, {"n": True}, False),
            ({"args": {"op": "inc"}, "argsMatch": "subset"}, {"op": "inc", "key": "k"}, True),
            ({"args": {"op": "inc"}, "argsMatch": "subset"}, {"op": "read", "key": "k"}, False),
            ({"args": {"q": {"a": 1}}, "argsMatch": "subset"}, {"q": {"a": 1, "b": 2}}, True),
            ({"args": {"q": {"a": 1}}, "argsMatch": "subset"}, {"q": {"b": 2}}, False),
            ({"args": {"l": [1]}, "argsMatch": "subset"}, {"l": [1, 2]}, False),
            ({"args": {"l": [1, 2]}, "argsMatch": "subset"}, {"l": [1, 2]}, True),
            ({"args": {}, "argsMatch": "subset"}, {"anything": 1}, True),
            ({"args": {"a": 1}, "argsMatch": "subset"}, [1], False),
            ({"args": {"a": 1}, "argsMatch": "ignore"}, {"a": 2}, True),
            ({}, {"whatever": [1, 2, 3]}, True),
            ({}, None, True),
            ({"args": None}, None, True),
            ({"args": None}, {}, False),
        ],
    )
    def test_modes(self, pattern: dict[str, Any], args: JsonValue, matches: bool) -> None:
        assert evals.args_match(entry(**pattern), args) is matches


class TestSelectEntry:
    def test_first_match_in_list_order(self) -> None:
        entries = [entry("a:x", 0), entry("a:y", 1), entry("a:y", 2)]
        hit = evals.select_entry(entries, frozenset(), "a:y", {})
        assert hit == evals.FixtureHit(index=1, entry=entries[1])

    def test_consumed_entries_are_skipped(self) -> None:
        entries = [entry("a:y", 1), entry("a:y", 2)]
        hit = evals.select_entry(entries, frozenset({0}), "a:y", {})
        assert hit == evals.FixtureHit(index=1, entry=entries[1])

    def test_tool_must_equal(self) -> None:
        entries = [entry("a:y")]
        assert evals.select_entry(entries, frozenset(), "a:Y", {}) == evals.FixtureMiss()

    def test_args_must_match(self) -> None:
        entries = [entry("a:y", args={"k": 1}), entry("a:y", args={"k": 2})]
        hit = evals.select_entry(entries, frozenset(), "a:y", {"k": 2})
        assert isinstance(hit, evals.FixtureHit)
        assert hit.index == 1

    def test_nothing_left(self) -> None:
        entries = [entry("a:y")]
        assert evals.select_entry(entries, frozenset({0}), "a:y", {}) == evals.FixtureMiss()


class TestFixtureCursor:
    def test_each_entry_serves_once(self) -> None:
        cursor = evals.FixtureCursor.of([entry("a:y", 1)], on_miss="fail")
        first = cursor.serve("a:y", {})
        assert isinstance(first, evals.Served)
        assert first.entry.response == 1
        assert isinstance(cursor.serve("a:y", {}), evals.Missed)
        assert cursor.miss_count == 1

    def test_reset_starts_a_new_trial(self) -> None:
        cursor = evals.FixtureCursor.of([entry("a:y", 1)], on_miss="fail")
        cursor.serve("a:y", {})
        cursor.serve("a:y", {})
        cursor.reset()
        assert cursor.miss_count == 0
        assert cursor.consumed == frozenset()
        assert isinstance(cursor.serve("a:y", {}), evals.Served)

    def test_live_miss_goes_live_uncounted(self) -> None:
        cursor = evals.FixtureCursor.of([], on_miss="live")
        assert isinstance(cursor.serve("a:y", {}), evals.GoLive)
        assert cursor.miss_count == 0

    def test_error_entries_are_served_as_entries(self) -> None:
        cursor = evals.FixtureCursor.of(
            [entry("a:y", {"code": "boom"}, isError=True)], on_miss="fail"
        )
        served = cursor.serve("a:y", {})
        assert isinstance(served, evals.Served)
        assert served.entry.is_error

    def test_drift_misses_one_and_serves_the_rest(self) -> None:
        recorded = [
            entry("c:counter", {"count": 1}, args={"op": "inc", "key": "k"}),
            entry("c:counter", {"count": 1}, args={"op": "read", "key": "k"}),
        ]
        cursor = evals.FixtureCursor.of(recorded, on_miss="fail")
        missed = cursor.serve("c:counter", {"op": "inc", "key": "k-drift"})
        assert isinstance(missed, evals.Missed)
        # The miss names the entry the call drifted from, the changed path and the recorded value.
        assert missed.detail.closest_index == 0
        assert missed.detail.closest_args == {"op": "inc", "key": "k"}
        assert missed.detail.diff == (evals.PathChange("$.key", "changed", "k", "k-drift"),)
        read = cursor.serve("c:counter", {"key": "k", "op": "read"})
        assert isinstance(read, evals.Served)
        assert read.index == 1
        assert cursor.miss_count == 1


# Few tools and few args, so that calls often hit and entries often repeat.
_tools = st.sampled_from(["a:x", "a:y"])
_args = st.sampled_from([{}, {"k": 1}, {"k": 2}, {"k": 1, "j": 0}])
_entries = st.lists(
    st.tuples(_tools, _args, st.sampled_from(["exact", "subset", "ignore"])).map(
        lambda t: entry(t[0], args=t[1], argsMatch=t[2])
    ),
    max_size=8,
)
_calls = st.lists(st.tuples(_tools, _args), max_size=12)


def _run(
    entries: list[ToolResponse], calls: list[tuple[str, JsonValue]], on_miss: OnMiss
) -> list[evals.Served | evals.Missed | evals.GoLive]:
    cursor = evals.FixtureCursor.of(entries, on_miss)
    return [cursor.serve(tool, args) for tool, args in calls]


@given(_entries, _calls, st.sampled_from(["fail", "live"]))
def test_a_consumed_entry_never_serves_twice(
    entries: list[ToolResponse], calls: list[tuple[str, JsonValue]], on_miss: OnMiss
) -> None:
    served = [o.index for o in _run(entries, calls, on_miss) if isinstance(o, evals.Served)]
    assert len(served) == len(set(served))


@given(_entries, _calls)
def test_each_call_gets_the_first_unconsumed_match(
    entries: list[ToolResponse], calls: list[tuple[str, JsonValue]]
) -> None:
    cursor = evals.FixtureCursor.of(entries, "fail")
    for tool, args in calls:
        before = cursor.consumed
        outcome = cursor.serve(tool, args)
        candidates = [
            i
            for i, e in enumerate(entries)
            if i not in before and e.tool == tool and evals.args_match(e, args)
        ]
        if candidates:
            assert isinstance(outcome, evals.Served)
            assert outcome.index == candidates[0]
        else:
            assert isinstance(outcome, evals.Missed)


@given(st.integers(min_value=1, max_value=6), _tools, _args)
def test_equal_entries_serve_in_list_order(count: int, tool: str, args: JsonValue) -> None:
    entries = [entry(tool, response=i, args=args) for i in range(count)]
    outcomes = _run(entries, [(tool, args)] * count, "fail")
    assert [o.entry.response for o in outcomes if isinstance(o, evals.Served)] == list(range(count))


@given(_entries, _calls)
def test_a_miss_under_fail_never_goes_live(
    entries: list[ToolResponse], calls: list[tuple[str, JsonValue]]
) -> None:
    cursor = evals.FixtureCursor.of(entries, "fail")
    outcomes = [cursor.serve(tool, args) for tool, args in calls]
    assert not any(isinstance(o, evals.GoLive) for o in outcomes)
    assert cursor.miss_count == sum(isinstance(o, evals.Missed) for o in outcomes)


@given(_entries, _calls)
def test_reset_replays_a_trial_identically(
    entries: list[ToolResponse], calls: list[tuple[str, JsonValue]]
) -> None:
    cursor = evals.FixtureCursor.of(entries, "fail")
    first = [cursor.serve(tool, args) for tool, args in calls]
    cursor.reset()
    assert [cursor.serve(tool, args) for tool, args in calls] == first


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(_json)
def test_every_value_is_an_exact_and_subset_match_of_itself(value: JsonValue) -> None:
    assert evals.json_equal(value, value)
    assert evals.is_json_subset(value, value)
    assert evals.args_hash(value) == evals.args_hash(value)


@given(
    st.dictionaries(st.text(max_size=3), _json, max_size=4),
    st.dictionaries(st.text(max_size=3), _json, max_size=3),
)
def test_an_object_is_a_subset_of_its_extension(
    base: dict[str, JsonValue], more: dict[str, JsonValue]
) -> None:
    assert evals.is_json_subset(base, {**more, **base})
