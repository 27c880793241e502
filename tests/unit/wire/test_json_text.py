"""The store's JSON text reads integers of any size back whole (wire/json_text.py).

orjson, the fast path, reads an integer beyond 64 bits as a float; `parse` reads a text
holding one with the standard library, and every other with orjson.
"""

from __future__ import annotations

import json

import pytest

from wopeval.wire import json_text

WEI = 123456789012345678901234567890


@pytest.mark.parametrize(
    "value",
    [
        {"wei": WEI},
        [-WEI, 10**40],
        2**64,
        -(2**63) - 1,
        {"n": -(10**19) + 1},
        {"nested": {"deep": [1, {"wei": 10**40}]}, "s": "x"},
    ],
)
@pytest.mark.parametrize("as_bytes", [False, True])
def test_an_integer_beyond_64_bits_is_read_back_whole(value: object, as_bytes: bool) -> None:
    text = json_text.compact(value)
    read = json_text.parse(text.encode() if as_bytes else text)
    assert read == value
    assert json.dumps(read) == json.dumps(value)  # ints, not floats equal to them


@pytest.mark.parametrize(
    "value",
    [
        2**64 - 1,
        -(2**63),
        -(10**18) + 1,
        {"id": "01234567890123456789012345"},
        [1.5, 12345678901234567890.5, "é", None, True],
    ],
)
def test_the_rest_reads_as_before(value: object) -> None:
    """Within 64 bits, and digits in a string or a float, the value is what orjson reads."""
    text = json_text.compact(value)
    read = json_text.parse(text)
    assert read == value
    assert json.dumps(read) == json.dumps(value)


def test_what_orjson_wrote_it_reads_back() -> None:
    value = {"a": [2**64 - 1, -(2**63)], "b": "x"}
    text = json_text.written(value)
    assert text is not None
    assert json_text.parse_written(text) == value
    assert json_text.written({"wei": WEI}) is None


def _nested(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    "value",
    [
        "\ud800",
        {"answer": ["a", "\udfff", "é"], "\ud800": 1},
        {"deep": _nested(300), "s": "\ud800"},
    ],
)
def test_a_lone_surrogate_is_written_as_utf_8_and_read_back(value: object) -> None:
    """orjson writes no lone surrogate; the standard library writes it raw, which no UTF-8
    holds (neither store's driver nor the wire takes it): `compact` escapes it, `parse`
    reads the escape back (orjson refuses it)."""
    text = json_text.compact(value)
    text.encode("utf-8")
    assert json_text.parse(text) == value
    assert json_text.parse(text.encode("utf-8")) == value


def test_a_value_nested_past_orjsons_limit_is_written_and_read_back() -> None:
    value = {"deep": _nested(300), "s": "é\u0000"}
    text = json_text.compact(value)
    assert json.loads(text) == value
    assert json_text.parse(text) == value


def test_text_that_is_not_json_still_fails_to_parse() -> None:
    for text in ('{"a":', '"\\ud800', "[1,]"):
        with pytest.raises(json.JSONDecodeError):
            json_text.parse(text)


@pytest.mark.parametrize("odd", [WEI, "\ud800"])
def test_embedded_text_beside_a_value_only_the_standard_library_writes(odd: object) -> None:
    """A document with text orjson wrote already (`embedded`) and a value orjson refuses
    (an eval plan's derived entries beside a model answer holding one) is written whole."""
    entries = json_text.written([{"args": {"q": "é"}, "answer": 1}])
    assert entries is not None
    document = {"entries": json_text.embedded(entries), "model_entries": [{"n": odd}]}
    text = json_text.compact(document)
    assert json_text.parse(text) == {
        "entries": [{"args": {"q": "é"}, "answer": 1}],
        "model_entries": [{"n": odd}],
    }


def test_what_is_not_json_is_still_refused_by_the_fallback() -> None:
    with pytest.raises(TypeError, match="set is not JSON serializable"):
        json_text.compact({"n": WEI, "s": {1}})
