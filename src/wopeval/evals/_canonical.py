"""Canonical JSON (RFC 8785 JCS): the one notion of "the same args" the host uses.

docs/design.md §3: `argsMatch: exact` compares the RFC 8785 canonical JSON of the args
as the agent passed them, and `argsHash` is `"sha256:" + hex(sha256(JCS(args)))`.
JCS makes `1` and `1.0` equal and keeps `true` apart from `1`, which Python's
`==` does not.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import orjson
import rfc8785
from pydantic import JsonValue

_JCS_INTEGERS = 2**53 - 1
"""The integers JCS represents (IEEE 754 doubles hold them exactly)."""


def canonical_json(value: JsonValue) -> bytes:
    """RFC 8785 canonical bytes of `value`.

    Raises `rfc8785.CanonicalizationError` (a `ValueError`) for values JCS cannot
    represent: NaN, infinities, integers beyond ±(2**53 - 1).
    """
    form = _written_form(value)
    return form if form is not None else rfc8785.dumps(value)


def _written_form(value: JsonValue) -> bytes | None:
    """orjson's sorted, compact text of `value` when that is its RFC 8785 form (None: the
    reference implementation decides).

    It is for strings, booleans, null and integers JCS holds: both write strings as UTF-8
    with the same escapes (RFC 8785 §3.2.2.2) and no whitespace. They part on floats
    (JCS writes numbers as ECMAScript does, `1.0` as `1`, §3.2.2.3) and on key order
    beyond ASCII (JCS sorts by UTF-16 code units, §3.2.3; orjson by code points), so a
    value with a float or a non-ASCII key goes to the reference implementation. The
    check costs a fraction of that implementation, which every recorded call's
    `argsHash` paid.
    """
    # Exact types, not isinstance: a subclass (an enum member, say) goes to the reference
    # implementation, which is always right; and the exact test is the cheaper one on a
    # path every tool call takes several times. An object's members are checked in its own
    # loop, a call's args being mostly one object of scalars. (Untyped: the walk checks
    # what it meets.) A value nested too deep for the walk goes to the reference too.
    try:
        if not _alike(value):
            return None
    except RecursionError:
        return None
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        return None  # a lone surrogate: JCS decides


def _alike(value: Any) -> bool:
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return bool(-_JCS_INTEGERS <= value <= _JCS_INTEGERS)
    if kind is dict:
        for key, item in value.items():
            # A key that is not a string is not JSON's to write alike.
            if type(key) is not str or not key.isascii():
                return False
            member = type(item)
            if member is str or member is bool or item is None:
                continue
            if member is int:
                if -_JCS_INTEGERS <= item <= _JCS_INTEGERS:
                    continue
                return False
            if not _alike(item):
                return False
        return True
    if kind is list:
        return all(_alike(item) for item in value)
    return False


def args_hash(value: JsonValue) -> str:
    """docs/design.md §3 `argsHash`: `"sha256:" + hex(sha256(JCS(args)))`.

    Args JCS cannot write (an integer beyond ±(2**53 - 1): a 64-bit id, an amount in wei)
    are still a tool's args, recorded and replayed: theirs is the hash of `compact_json`'s
    sorted text, which `json_equal` compares them by and which no JCS form equals (it holds
    what JCS refused). A text with a lone surrogate, which no UTF-8 holds, is hashed as
    JSON carries it, escaped (`"\\ud800"`): no other value's text holds that escape."""
    try:
        return hash_of_form(canonical_json(value))
    except rfc8785.CanonicalizationError:
        text = _fallback_text(value)
    try:
        return hash_of_form(text.encode("utf-8"))
    except UnicodeEncodeError:
        return hash_of_form(json.dumps(value, sort_keys=True, separators=(",", ":")).encode())


def hash_of_form(form: bytes) -> str:
    """`args_hash` of the value whose `canonical_json` is `form`."""
    return "sha256:" + hashlib.sha256(form).hexdigest()


def canonical_form(value: JsonValue) -> bytes | None:
    """`canonical_json(value)`, or None for a value JCS cannot write.

    Two values with forms are `json_equal` exactly when their forms are equal (that is
    what `exact` means, docs/design.md §3), and a value without one is `json_equal` to
    no value with one: its sorted fallback text holds what JCS refused (NaN, an
    infinity, an integer beyond ±(2**53 - 1), a lone surrogate), which no written value
    with a form holds. So a value's form can stand for it as a key of `exact` matching."""
    form = _written_form(value)
    if form is not None:
        return form
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError:
        return None


def json_equal(left: JsonValue, right: JsonValue) -> bool:
    """Equality of two JSON values as RFC 8785 canonical JSON.

    Values outside JCS's domain (e.g. a 64-bit id as an integer) have no
    canonical form; they compare by sorted, compact `json.dumps`, which is exact
    for them and still keeps `true` apart from `1`.

    Most pairs are decided by walking both values once (`_same_json`), which is what
    equality of the canonical forms comes to, without writing either; the fixture
    matcher compares every call this way. What the walk cannot decide alike (a value
    outside JCS's domain, a type that is not JSON's own) goes to the forms themselves.
    """
    try:
        return _same_json(left, right)
    except _CanonicalFormsDecide:
        pass
    try:
        return canonical_json(left) == canonical_json(right)
    except rfc8785.CanonicalizationError:
        return _fallback_text(left) == _fallback_text(right)


class _CanonicalFormsDecide(Exception):
    """The walk met a value whose comparison the canonical forms decide."""


_NUMBERS = (int, float)
_JSON_TYPES = (str, int, float, bool, type(None), dict, list)


def _same_json(left: Any, right: Any) -> bool:
    """Whether JCS writes `left` and `right` alike (RFC 8785 §3.2), where that is decided
    here; raises `_CanonicalFormsDecide` otherwise.

    It returns False only where the two texts differ under either writer, and True only
    for values JCS holds whole, so it never answers otherwise than the forms would.
    JCS writes every number as the double it is (§3.2.2.3), so an integer and a float
    are alike when they are the same number, as Python compares them; a boolean is only
    ever a boolean; objects are alike with the same keys and alike values, in any order.
    """
    kind = type(left)
    if kind is not type(right):
        if kind in _NUMBERS and type(right) in _NUMBERS:
            return _in_domain(left) == _in_domain(right)
        if kind in _JSON_TYPES and type(right) in _JSON_TYPES:
            return False
        raise _CanonicalFormsDecide
    if kind is str or kind is bool or left is None:
        return bool(left == right)
    if kind is int or kind is float:
        return _in_domain(left) == _in_domain(right)
    if kind is dict:
        if len(left) != len(right):
            return False
        for key, value in left.items():
            if type(key) is not str:
                raise _CanonicalFormsDecide
            if key not in right or not _same_json(value, right[key]):
                return False
        return True
    if kind is list:
        if len(left) != len(right):
            return False
        return all(_same_json(a, b) for a, b in zip(left, right, strict=True))
    raise _CanonicalFormsDecide


def _in_domain(number: int | float) -> int | float:
    """`number`, if JCS holds it: a finite double, an integer a double holds exactly."""
    if type(number) is int:
        if -_JCS_INTEGERS <= number <= _JCS_INTEGERS:
            return number
    elif math.isfinite(number):
        return number
    raise _CanonicalFormsDecide


def compact_json(value: JsonValue) -> str:
    """`value` as compact JSON text: canonical where JCS can, sorted `json.dumps` otherwise."""
    try:
        return canonical_json(value).decode("utf-8")
    except rfc8785.CanonicalizationError:
        return _fallback_text(value)


def _fallback_text(value: JsonValue) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
