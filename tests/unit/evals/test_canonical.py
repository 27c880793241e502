"""Canonical JSON is RFC 8785's, whichever way it is written (evals/_canonical.py).

Most values are written by orjson, whose sorted output is their JCS form; floats,
non-ASCII keys and integers JCS cannot hold go to the reference implementation. Both
ways must give the reference's bytes for every JSON value, or its refusal.
"""

from __future__ import annotations

import hashlib
import json
import random

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


def _forms_equal(left: JsonValue, right: JsonValue) -> bool:
    """Equality as the docstring of `json_equal` defines it, by writing both values."""
    try:
        return rfc8785.dumps(left) == rfc8785.dumps(right)
    except rfc8785.CanonicalizationError:
        return json.dumps(left, sort_keys=True, separators=(",", ":"), ensure_ascii=False) == (
            json.dumps(right, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        )


def _twin(value: JsonValue, rng: random.Random) -> JsonValue:
    """`value`, its leaves now and then written as another type or changed: the pairs a
    walk could get wrong (`1` and `1.0` alike, `true` and `1` apart, keys in any order)."""
    if isinstance(value, dict):
        items = [(key, _twin(item, rng)) for key, item in value.items()]
        rng.shuffle(items)
        if items and rng.random() < 0.1:
            items.pop()
        return dict(items)
    if isinstance(value, list):
        return [_twin(item, rng) for item in value]
    roll = rng.random()
    if isinstance(value, bool):
        return int(value) if roll < 0.3 else value
    if isinstance(value, int):
        if roll < 0.3:
            return float(value)
        if roll < 0.4 and value in (0, 1):
            return bool(value)
        return value + 1 if roll < 0.5 else value
    if isinstance(value, float):
        if roll < 0.3 and value.is_integer():
            return int(value)
        return -value if roll < 0.4 else value
    if isinstance(value, str):
        return value + "x" if roll < 0.1 else value
    return value


@given(_VALUES, st.randoms(use_true_random=False))
def test_json_equality_of_near_twins_is_what_their_canonical_forms_say(
    value: JsonValue, rng: random.Random
) -> None:
    twin = _twin(value, rng)
    assert evals.json_equal(value, twin) == _forms_equal(value, twin)
    assert evals.json_equal(twin, value) == _forms_equal(twin, value)


def test_the_pairs_a_walk_could_get_wrong_compare_as_their_canonical_forms() -> None:
    assert evals.json_equal({"a": 1, "b": [1.0, "x"]}, {"b": [1, "x"], "a": 1.0})
    assert not evals.json_equal({"a": True}, {"a": 1})
    assert not evals.json_equal([0], [False])
    assert evals.json_equal(-0.0, 0)
    # Outside JCS's domain the whole value compares as text: 1 and 1.0 are then apart.
    assert not evals.json_equal({"a": 1, "id": 2**60}, {"a": 1.0, "id": 2**60})
    assert evals.json_equal({"id": 2**60}, {"id": 2**60})
    assert evals.json_equal(float("nan"), float("nan"))


def test_args_jcs_cannot_write_have_a_hash_of_their_sorted_text() -> None:
    """A 64-bit id or an amount in wei is a tool's args all the same: its `argsHash` (a
    trial's calls, a hash-only agent's events) is its sorted text's, never a crash."""
    wei = 123456789012345678901234567890
    text = b'{"a":1,"wei":123456789012345678901234567890}'
    assert evals.args_hash({"wei": wei, "a": 1}) == _hash(text)
    assert evals.args_hash({"id": 2**53}) != evals.args_hash({"id": 2**53 + 1})
    # JCS's own hash where it can: 2**53 - 1 is in its domain.
    assert evals.args_hash({"id": 2**53 - 1}) == _hash(b'{"id":9007199254740991}')


def test_a_lone_surrogates_hash_is_its_escaped_texts() -> None:
    """A lone surrogate (an agent's decision or args, legal JSON text) has no UTF-8 and no
    JCS form: its hash is that of the text JSON carries it as, escaped, never a crash (a
    trial's task detail answered 500); the text of the escape itself hashes otherwise."""
    assert evals.args_hash({"s": "\ud800", "é": 1}) == _hash(b'{"s":"\\ud800","\\u00e9":1}')
    assert evals.args_hash({"s": "\ud800"}) != evals.args_hash({"s": "\\ud800"})


def _hash(form: bytes) -> str:
    return "sha256:" + hashlib.sha256(form).hexdigest()
