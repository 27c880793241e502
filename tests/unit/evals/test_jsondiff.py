"""`evals/_jsondiff.py` and `wire/jsonpath.py`: structural diffs, and the paths they name."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import JsonValue

from wopeval import evals
from wopeval.wire.jsonpath import JsonPathError, Segment, format_json_path, parse_json_path

# JCS's domain (`_canonical.json_equal` falls back outside it): safe integers, finite floats.
_leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=4)
)
_keys = st.sampled_from(["a", "b", "key with space", "é", "0", 'q"uote', ""])
_json = st.recursive(
    _leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=10,
)


class TestJsonDiff:
    def test_nested_changes_name_their_paths(self) -> None:
        expected: JsonValue = {"customer": {"tier": "gold", "id": 1}, "items": [{"sku": "a"}, 2]}
        actual: JsonValue = {
            "customer": {"tier": "silver"},
            "items": [{"sku": "a", "qty": 1}],
            "x y": 0,
        }
        assert [c.to_json() for c in evals.json_diff(expected, actual)] == [
            {"path": "$.customer.tier", "kind": "changed", "expected": "gold", "actual": "silver"},
            {"path": "$.customer.id", "kind": "removed", "expected": 1},
            {"path": "$.items[0].qty", "kind": "added", "actual": 1},
            {"path": "$.items[1]", "kind": "removed", "expected": 2},
            {"path": '$["x y"]', "kind": "added", "actual": 0},
        ]

    def test_leaves_compare_as_canonical_json(self) -> None:
        assert evals.json_diff({"n": 1, "f": 0.5}, {"n": 1.0, "f": 0.5}) == []
        assert evals.json_diff([True], [1]) == [evals.PathChange("$[0]", "changed", True, 1)]

    def test_null_stays_apart_from_absent(self) -> None:
        (change,) = evals.json_diff({"a": None}, {})
        assert change.to_json() == {"path": "$.a", "kind": "removed", "expected": None}

    def test_a_root_change_is_one_change(self) -> None:
        assert evals.json_diff({"a": 1}, [1]) == [evals.PathChange("$", "changed", {"a": 1}, [1])]

    def test_subset_diff_ignores_extra_keys_outside_arrays(self) -> None:
        assert evals.subset_diff({"a": {"b": 1}}, {"a": {"b": 1, "c": 2}, "d": 3}) == []
        assert evals.subset_diff({"a": [{"b": 1}]}, {"a": [{"b": 1, "c": 2}]}) == [
            evals.PathChange("$.a[0].c", "added", actual=2)
        ]


@given(_json)
def test_a_value_does_not_differ_from_itself(value: JsonValue) -> None:
    assert evals.json_diff(value, value) == []
    assert evals.subset_diff(value, value) == []


@given(_json, _json)
def test_the_diff_is_empty_exactly_when_the_values_are_canonically_equal(
    left: JsonValue, right: JsonValue
) -> None:
    assert (evals.json_diff(left, right) == []) is evals.json_equal(left, right)


@given(_json, _json)
def test_the_subset_diff_is_empty_exactly_when_the_subset_rule_holds(
    part: JsonValue, whole: JsonValue
) -> None:
    assert (evals.subset_diff(part, whole) == []) is evals.is_json_subset(part, whole)


@given(_json, _json)
def test_every_path_resolves_to_its_values_on_the_sides_that_have_it(
    expected: JsonValue, actual: JsonValue
) -> None:
    for change in evals.json_diff(expected, actual):
        segments = parse_json_path(change.path)
        on_expected = evals.value_at(expected, segments)
        on_actual = evals.value_at(actual, segments)
        if change.kind == "added":
            assert on_expected is None
        else:
            assert on_expected is not None
            assert evals.json_equal(on_expected.value, change.expected)
        if change.kind == "removed":
            assert on_actual is None
        else:
            assert on_actual is not None
            assert evals.json_equal(on_actual.value, change.actual)


_SEVERAL = "(wildcards, slices and filters name several values)"


class TestJsonPath:
    @pytest.mark.parametrize(
        ("text", "segments"),
        [
            ("$", ()),
            ("$.a.b", ("a", "b")),
            ("$.a[0]", ("a", 0)),
            ("$.items[-1]", ("items", -1)),
            ('$["key with space"]', ("key with space",)),
            ("$['single \\'quoted\\'']", ("single 'quoted'",)),
            ('$["tab\\tand \\"quote\\""]', ('tab\tand "quote"',)),
            ("$.é_1", ("é_1",)),
            ('$[0]["0"]', (0, "0")),
        ],
    )
    def test_singular_queries_parse(self, text: str, segments: tuple[Segment, ...]) -> None:
        assert parse_json_path(text) == segments

    @pytest.mark.parametrize(
        ("text", "why"),
        [
            ("a.b", "must start with $"),
            ("$.", "a member name must follow '.' at character 2"),
            ("$.1a", "a member name must follow '.' at character 2"),
            ("$a", "expected '.' or '[' at character 2"),
            ("$[*]", f"expected an index or a quoted name at character 3 {_SEVERAL}"),
            ("$..a", "a member name must follow '.' at character 2"),
            ("$[0:2]", "expected ']' at character 4"),
            ("$[01]", "expected ']' at character 4"),
            ("$[?@.a]", f"expected an index or a quoted name at character 3 {_SEVERAL}"),
            ('$["open', "the name at character 3 is not closed"),
            ('$["bad \\q"]', "bad escape in the name at character 3"),
            ("$[0", "expected ']' at character 4"),
            (f"$[{2**53}]", "the index at character 3 is out of range"),
        ],
    )
    def test_other_texts_are_refused_saying_where(self, text: str, why: str) -> None:
        with pytest.raises(JsonPathError) as caught:
            parse_json_path(text)
        assert str(caught.value) == why

    def test_value_at_follows_names_and_indexes(self) -> None:
        document: JsonValue = {"items": [{"sku": "a"}, {"sku": "b"}]}
        assert evals.value_at(document, ("items", -1, "sku")) == evals.Found(
            "b", ("items", 1, "sku")
        )
        assert evals.value_at(document, ("items", 2)) is None
        assert evals.value_at(document, ("items", "0")) is None
        assert evals.value_at(document, ("items", 0, "sku", 0)) is None


_segments = st.lists(
    st.integers(min_value=0, max_value=2**53 - 1) | st.text(max_size=6), max_size=5
).map(tuple)


@given(_segments)
def test_a_formatted_path_parses_back_to_its_segments(segments: tuple[Segment, ...]) -> None:
    assert parse_json_path(format_json_path(segments)) == segments


def _rfc_name_first(code_point: int) -> bool:
    """RFC 9535 §2.5.1.1: name-first = ALPHA / "_" / any code point beyond ASCII."""
    char = chr(code_point)
    return code_point >= 0x80 or char == "_" or ("a" <= char.lower() <= "z")


def test_a_name_is_written_as_shorthand_exactly_where_rfc_9535_allows_it() -> None:
    # Each code point of the first two blocks and the edges beyond them, as a name's
    # first character and as a later one (where a digit is allowed too): shorthand
    # (`.name`) where the grammar allows, brackets elsewhere.
    edges = (0xD7FF, 0xD800, 0xDFFF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF)
    for code_point in (*range(0x800), *edges):
        char = chr(code_point)
        first = _rfc_name_first(code_point)
        later = first or "0" <= char <= "9"
        assert format_json_path((char,)).startswith("$.") is first, hex(code_point)
        assert format_json_path(("a" + char,)).startswith("$.") is later, hex(code_point)
