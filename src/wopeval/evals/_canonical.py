"""Canonical JSON (RFC 8785 JCS): the one notion of "the same args" the host uses.

docs/design.md §3: `argsMatch: exact` compares the RFC 8785 canonical JSON of the args
as the agent passed them, and `argsHash` is `"sha256:" + hex(sha256(JCS(args)))`.
JCS makes `1` and `1.0` equal and keeps `true` apart from `1`, which Python's
`==` does not.
"""

from __future__ import annotations

import hashlib
import json

import rfc8785
from pydantic import JsonValue


def canonical_json(value: JsonValue) -> bytes:
    """RFC 8785 canonical bytes of `value`.

    Raises `rfc8785.CanonicalizationError` (a `ValueError`) for values JCS cannot
    represent: NaN, infinities, integers beyond ±(2**53 - 1).
    """
    return rfc8785.dumps(value)


def args_hash(value: JsonValue) -> str:
    """docs/design.md §3 `argsHash`: `"sha256:" + hex(sha256(JCS(args)))`."""
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()


def json_equal(left: JsonValue, right: JsonValue) -> bool:
    """Equality of two JSON values as RFC 8785 canonical JSON.

    Values outside JCS's domain (e.g. a 64-bit id as an integer) have no
    canonical form; they compare by sorted, compact `json.dumps`, which is exact
    for them and still keeps `true` apart from `1`.
    """
    # Equal sorted texts already mean equal JSON, and cost a fraction of JCS; only
    # texts that differ (1 vs 1.0, escaping) need the canonical form to decide.
    if _fallback_text(left) == _fallback_text(right):
        return True
    try:
        return canonical_json(left) == canonical_json(right)
    except rfc8785.CanonicalizationError:
        return False


def compact_json(value: JsonValue) -> str:
    """`value` as compact JSON text: canonical where JCS can, sorted `json.dumps` otherwise."""
    try:
        return canonical_json(value).decode("utf-8")
    except rfc8785.CanonicalizationError:
        return _fallback_text(value)


def _fallback_text(value: JsonValue) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
