"""The request guard's strict JSON (wire/strict_json.py): its one-pass parse answers every body
as the full check does, with the value `json.loads` gives or the same refusal."""

from __future__ import annotations

import json
from typing import Any

import pytest

from wopeval.wire import errors, limits, strict_json

GOOD: dict[str, bytes] = {
    "object": b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}',
    "numbers": b'{"t": 0.7, "n": -3, "big": 9223372036854775807, "e": 1e308, "tiny": 1e-400}',
    "scalar": b"null",
    "non-ascii": '{"text": "für heute ✓"}'.encode(),
    "escapes": b'{"text": "tab\\t quote\\" \\u00e9 \\ud83d\\ude00 \\\\u0000 not a NUL"}',
    "under-the-depth-limit": b"[" * (limits.JSON_MAX_DEPTH - 1)
    + b"]" * (limits.JSON_MAX_DEPTH - 1),
}
AT_THE_DEPTH_LIMIT = {
    "narrow": b"[" * limits.JSON_MAX_DEPTH + b"]" * limits.JSON_MAX_DEPTH,
    "wide": b"["
    + b"[]," * (limits.JSON_MAX_DEPTH + 1)
    + b"[" * (limits.JSON_MAX_DEPTH - 1)
    + b"]" * (limits.JSON_MAX_DEPTH - 1)
    + b"]",
}
BAD: dict[str, bytes] = {
    "nan": b'{"t": NaN}',
    "infinity": b"[Infinity]",
    "minus-infinity": b'{"a": [1, -Infinity]}',
    "float-overflow": b'{"t": 1e400}',
    "int-past-64-bits": b'{"n": %d}' % (limits.INT64_MAX + 1),
    "int-below-64-bits": b'{"n": %d}' % (limits.INT64_MIN - 1),
    "int-of-5000-digits": b"[" + b"7" * 5000 + b"]",
    "nul-in-string": b'{"text": "a\\u0000b"}',
    "nul-in-key": b'{"a\\u0000": 1}',
    "lone-high-surrogate": b'["\\uD800"]',
    "lone-low-surrogate": b'{"k": "x\\udc00"}',
    "nested-past-the-limit": b"[" * (limits.JSON_MAX_DEPTH + 1)
    + b"]" * (limits.JSON_MAX_DEPTH + 1),
    "nested-far-past-the-limit": b"[" * 5000 + b"]" * 5000,
    "not-json": b'{"model": ',
    "a-bom": "\ufeff{}".encode(),
    "trailing-data": b"{} {}",
}


def _wide(body: bytes) -> bytes:
    """`body` beside more brackets than the depth limit, none of them deep: the one-pass parse
    then walks the containers for their depth."""
    return (
        b'{"pad": [' + b",".join([b"[]"] * (limits.JSON_MAX_DEPTH + 1)) + b'], "v": ' + body + b"}"
    )


def _full_check(raw: bytes) -> Any:
    """What the full check alone answers: the value, or the refusal's message and details."""
    try:
        return strict_json._checked(raw.decode("utf-8"))
    except errors.ValidationFailed as refusal:
        return (str(refusal), refusal.details)


def _answer(raw: bytes) -> Any:
    try:
        return strict_json.parse_body(raw)
    except errors.ValidationFailed as refusal:
        return (str(refusal), refusal.details)


@pytest.mark.parametrize("wide", [False, True], ids=["narrow", "wide"])
@pytest.mark.parametrize("name", list(GOOD))
def test_a_strict_body_is_its_json_value(name: str, wide: bool) -> None:
    raw = _wide(GOOD[name]) if wide else GOOD[name]
    assert strict_json.parse_body(raw) == json.loads(raw)


@pytest.mark.parametrize("raw", list(AT_THE_DEPTH_LIMIT.values()), ids=list(AT_THE_DEPTH_LIMIT))
def test_a_body_nested_to_the_limit_is_its_json_value(raw: bytes) -> None:
    assert strict_json.parse_body(raw) == json.loads(raw)


@pytest.mark.parametrize("wide", [False, True], ids=["narrow", "wide"])
@pytest.mark.parametrize("name", list(BAD))
def test_a_refused_body_is_refused_as_the_full_check_refuses_it(name: str, wide: bool) -> None:
    raw = _wide(BAD[name]) if wide and name != "a-bom" else BAD[name]
    with pytest.raises(errors.ValidationFailed):
        strict_json.parse_body(raw)
    assert _answer(raw) == _full_check(raw)


def test_a_body_that_is_not_utf8_is_refused() -> None:
    assert _answer(b'"caf\xe9"') == (
        "'body' is not valid UTF-8 (byte 4).",
        {"field": "body"},
    )


def test_a_refusal_names_where_the_value_sits() -> None:
    refused = _answer(b'{"messages": [{"content": "ok"}, {"content": "a\\u0000"}]}')
    assert refused[1] == {"field": "messages[1].content"}
    deep = b'{"a": ' + b"[" * limits.JSON_MAX_DEPTH + b"]" * limits.JSON_MAX_DEPTH + b"}"
    assert _answer(deep)[1]["field"].startswith("a[0]")
