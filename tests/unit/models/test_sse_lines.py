"""`SseLines`: a relayed stream's lines, whatever the chunks it arrived in."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from wopeval.models import SseLines

STREAM = (
    'event: response.output_text.delta\r\ndata: {"delta": "caf\u00e9 \u2028 ok"}\r\n\r\n'
    'data: {"x": 1}\n\ndata: [DONE]\r\r'
)
LINES = [
    "event: response.output_text.delta",
    'data: {"delta": "caf\u00e9 \u2028 ok"}',
    "",
    'data: {"x": 1}',
    "",
    "data: [DONE]",
    "",
]


def lines_of(chunks: list[bytes]) -> list[str]:
    reader = SseLines()
    found = [line for chunk in chunks for line in reader.feed(chunk)]
    return found + reader.feed(b"", final=True)


def test_lines_end_at_cr_lf_and_crlf_only() -> None:
    assert lines_of([STREAM.encode()]) == LINES


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM.encode())), max_size=12))
def test_any_cut_of_the_bytes_gives_the_same_lines(cuts: list[int]) -> None:
    data = STREAM.encode()
    bounds = [0, *sorted(cuts), len(data)]
    chunks = [data[start:end] for start, end in itertools.pairwise(bounds)]
    assert lines_of(chunks) == LINES


def test_a_last_line_without_its_end_is_given_at_the_end() -> None:
    reader = SseLines()
    assert reader.feed(b"data: a\ndata: b") == ["data: a"]
    assert reader.feed(b"", final=True) == ["data: b"]
