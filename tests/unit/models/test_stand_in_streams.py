"""Each adapter reads the stand-in's streams (text and arguments split in pieces, as a
provider sends them) into the answer the stand-in gives whole."""

from __future__ import annotations

import json
from typing import Any

import pytest

from _model_server import chat, messages, reply, responses, responses_stream
from wopeval import models
from wopeval.models import CHAT, MESSAGES, RESPONSES

TURNS: list[dict[str, Any]] = [
    {"content": "Hello there, this is long enough to be split."},
    {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}},
                    {"name": "lookup", "arguments": {"order": "A-1001", "deep": {"x": [1, 2]}}}]},
    {"refusal": "no", "finish_reason": "stop"},
]  # fmt: skip
IDS = ["content", "tool-calls", "refusal"]
USER = [{"role": "user", "content": "q"}]


def _assembled(api: models.ModelApi, lines: list[str]) -> models.ModelAnswer:
    assembler = api.assembler()
    for line in lines:
        assembler.feed(line)
    assert assembler.complete
    return assembler.answer()


def _named(events: Any) -> list[str]:
    return [f"event: {e['type']}\ndata: {json.dumps(e)}\n" for e in events]


@pytest.mark.parametrize("turn", TURNS, ids=IDS)
def test_chat_deltas_add_up_to_the_whole_answer(turn: dict[str, Any]) -> None:
    body = {"model": "m", "messages": USER, "stream_options": {"include_usage": True}}
    lines = [f"data: {json.dumps(c)}" for c in chat.chunks(body, reply(turn, 0))]
    whole = CHAT.answer(chat.completion(body, reply(turn, 0))).document
    # A stream opens with an empty content delta (as OpenAI's does): "" where whole says null.
    expected = {**whole, "content": whole["content"] or ""}
    assert _assembled(CHAT, [*lines, "", "data: [DONE]"]).document == expected


@pytest.mark.parametrize("turn", TURNS, ids=IDS)
def test_responses_events_add_up_to_the_whole_answer(turn: dict[str, Any]) -> None:
    body = {"model": "m", "input": "q"}
    whole = responses.response_object(body, reply(turn, 0), [{"role": "user", "content": "q"}])
    lines = "".join(_named(responses_stream.events(whole))).split("\n")
    assert _assembled(RESPONSES, lines) == RESPONSES.answer(whole)


@pytest.mark.parametrize("turn", TURNS, ids=IDS)
def test_messages_events_add_up_to_the_whole_answer(turn: dict[str, Any]) -> None:
    body = {"model": "m", "max_tokens": 9, "messages": USER}
    whole = messages.message(body, reply(turn, 0))
    lines = "".join(_named(messages.events(whole))).split("\n")
    assert _assembled(MESSAGES, lines) == MESSAGES.answer(whole)
