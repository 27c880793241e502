"""The model proxy's streams: deltas add up to the whole answer, and a replay streams it back."""

from __future__ import annotations

import json
from typing import Any

import pytest

from _model_server import reply
from _model_server.chat import chunks, completion
from wopeval.agents import normalised_answer
from wopeval.api._model_stream import StreamedAnswer, replayed_stream

BODY = {
    "model": "m",
    "messages": [{"role": "user", "content": "q"}],
    "stream_options": {"include_usage": True},
}
TURNS: list[dict[str, Any]] = [
    {"content": "Hello there, this is long enough to be split."},
    {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}},
                    {"name": "lookup", "arguments": {"order": "A-1001", "deep": {"x": [1, 2]}}}]},
    {"refusal": "no", "finish_reason": "stop"},
]  # fmt: skip


def _lines(chunks: Any) -> list[str]:
    return [f"data: {json.dumps(chunk)}" for chunk in chunks] + ["", "data: [DONE]"]


@pytest.mark.parametrize("turn", TURNS, ids=["content", "tool-calls", "refusal"])
def test_streamed_deltas_add_up_to_the_whole_answer(turn: dict[str, Any]) -> None:
    streamed = StreamedAnswer()
    for line in _lines(chunks(BODY, reply(turn, 0))):
        streamed.feed(line)
    assert streamed.done
    assert streamed.complete
    whole = normalised_answer(completion(BODY, reply(turn, 0))).document
    # A stream opens with an empty content delta (as OpenAI's does): "" where the whole says null.
    expected = {**whole, "content": whole["content"] or ""}
    assert normalised_answer(streamed.completion()).document == expected


@pytest.mark.parametrize("turn", TURNS, ids=["content", "tool-calls", "refusal"])
def test_a_replayed_answer_streams_back_to_the_same_answer(turn: dict[str, Any]) -> None:
    recorded = normalised_answer(completion(BODY, reply(turn, 0)))
    streamed = StreamedAnswer()
    for event in replayed_stream(recorded, include_usage=True):
        for line in event.decode().splitlines():
            streamed.feed(line)
    assert streamed.done
    assert normalised_answer(streamed.completion()).document == recorded.document


def test_a_stream_cut_short_is_not_complete() -> None:
    streamed = StreamedAnswer()
    for line in _lines(chunks(BODY, reply(TURNS[0], 0)))[:3]:
        streamed.feed(line)
    assert not streamed.complete
