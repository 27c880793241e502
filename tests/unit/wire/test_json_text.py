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
