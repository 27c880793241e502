"""Canonical JSON is RFC 8785's, whichever way it is written (evals/_canonical.py).

Most values are written by orjson, whose sorted output is their JCS form; floats,
non-ASCII keys and integers JCS cannot hold go to the reference implementation. Both
ways must give the reference's bytes for every JSON value, or its refusal.
"""

from __future__ import annotations

import rfc8785
from hypothesis import given
from hypothesis import strategies as st
from pydantic import JsonValue

from wopeval import evals

_KEYS = st.text(max_size=4) | st.sampled_from(["a", "B", "\u00e9", "\ue000", "\U0001f600", ""])
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=12,
)


def _reference(value: JsonValue) -> bytes | None:
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError:
        return None


@given(_VALUES)
def test_canonical_bytes_are_the_reference_implementations(value: JsonValue) -> None:
    wanted = _reference(value)
    try:
        got: bytes | None = evals.canonical_json(value)
    except rfc8785.CanonicalizationError:
        got = None
    assert got == wanted


def test_the_forms_that_set_the_two_writers_apart_are_written_as_jcs_writes_them() -> None:
    assert evals.canonical_json({"b": 1.0, "a": [True, 1]}) == b'{"a":[true,1],"b":1}'
    # UTF-16 order: U+1F600 (a surrogate pair, 0xD83D...) sorts before U+E000.
    assert evals.canonical_json({"\ue000": 1, "\U0001f600": 2}) == (
        '{"\U0001f600":2,"\ue000":1}'.encode()
    )
    assert evals.canonical_json({"z": "\u001f\n", "a": None}) == b'{"a":null,"z":"\\u001f\\n"}'


@given(_VALUES, _VALUES)
def test_json_equality_is_equality_of_the_canonical_forms(
    left: JsonValue, right: JsonValue
) -> None:
    canonical = _reference(left), _reference(right)
    if None not in canonical:
        assert evals.json_equal(left, right) == (canonical[0] == canonical[1])
        assert evals.json_equal(left, left)
