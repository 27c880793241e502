"""models/messages.py: Anthropic Messages requests, answers whole and streamed, and replay."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import JsonValue

from wopeval import models
from wopeval.models import MESSAGES

from ._sdk import anthropic_client, lines

REQUEST: dict[str, JsonValue] = {
    "model": "claude-test",
    "max_tokens": 256,
    "messages": [{"role": "user", "content": "add 2 and 3"}],
}
_BASE: dict[str, Any] = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-test-0001",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 30,
        "cache_creation_input_tokens": 5,
        "cache_read_input_tokens": 100,
        "output_tokens": 12,
    },
}
TOOL_USE: dict[str, Any] = {
    **_BASE,
    "stop_reason": "tool_use",
    "content": [
        {"type": "thinking", "thinking": "I should add.", "signature": "sig-1"},
        {"type": "text", "text": "Let me add them."},
        {"type": "tool_use", "id": "toolu_1", "name": "add",
         "input": {"a": 2, "b": 3, "note": {"unit": "€"}}},
    ],
}  # fmt: skip
TEXT: dict[str, Any] = {
    **_BASE,
    "id": "msg_2",
    "stop_reason": "end_turn",
    "content": [{"type": "text", "text": "The sum is 5."}],
}
ANSWERS = pytest.mark.parametrize("body", [TOOL_USE, TEXT], ids=["tool-use", "text"])


@pytest.mark.parametrize(
    ("body", "missing"),
    [({"max_tokens": 1, "messages": []}, "model"), ({"model": "m", "messages": []}, "max_tokens"),
     ({"model": "m", "max_tokens": 1}, "messages")],
)  # fmt: skip
def test_a_request_needs_what_the_api_requires(body: dict[str, Any], missing: str) -> None:
    with pytest.raises(models.InvalidModelRequest, match=f"{missing}: Field required"):
        MESSAGES.parse(body)


def test_the_stream_flag_is_transport_only() -> None:
    request = MESSAGES.parse({**REQUEST, "stream": True})
    assert request.stream
    assert request.canonical() == REQUEST


@ANSWERS
def test_a_whole_answer_is_recorded_as_returned_and_replayed_to_the_sdk(body: Any) -> None:
    answer = MESSAGES.answer(body)
    assert answer.document == body
    # Cache reads and writes are input the model was given.
    assert MESSAGES.usage(answer) == models.Usage(135, 12)
    assert MESSAGES.reported_model(answer) == "claude-test-0001"
    client = anthropic_client(MESSAGES.parse(REQUEST), answer)
    replayed = client.messages.create(
        model="claude-test", max_tokens=256, messages=[{"role": "user", "content": "add 2 and 3"}]
    )
    assert replayed.model_dump(mode="json", exclude_none=True)["content"] == body["content"]
    assert replayed.stop_reason == body["stop_reason"]


@ANSWERS
def test_a_replayed_stream_reads_in_the_sdk_as_the_recorded_answer(body: Any) -> None:
    answer = MESSAGES.answer(body)
    client = anthropic_client(MESSAGES.parse({**REQUEST, "stream": True}), answer)
    with client.messages.stream(
        model="claude-test", max_tokens=256, messages=[{"role": "user", "content": "add 2 and 3"}]
    ) as events:
        for _ in events:
            pass
        final = events.get_final_message()
    assert final.id == body["id"]
    assert final.model_dump(mode="json", exclude_none=True)["content"] == body["content"]
    assert (final.stop_reason, final.usage.output_tokens) == (body["stop_reason"], 12)
    assert final.usage.cache_read_input_tokens == 100


@ANSWERS
def test_streamed_events_add_up_to_the_recorded_answer(body: Any) -> None:
    answer = MESSAGES.answer(body)
    assembler = MESSAGES.assembler()
    events = lines(MESSAGES.served_stream(answer, MESSAGES.parse({**REQUEST, "stream": True})))
    for line in events[:-3]:
        assembler.feed(line)
    assert not assembler.complete, "no message_stop yet: a cut stream is not an answer"
    for line in events[-3:]:
        assembler.feed(line)
    assert assembler.complete
    assert assembler.answer() == answer


def test_a_tool_input_streamed_in_pieces_is_joined_then_read() -> None:
    given = json.dumps({"a": 2, "b": 3})
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {**_BASE, "content": [], "stop_reason": None,
                                              "usage": {"input_tokens": 30, "output_tokens": 1}}},
        {"type": "ping"},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {}}},
        *({"type": "content_block_delta", "index": 0,
           "delta": {"type": "input_json_delta", "partial_json": given[i : i + 4]}}
          for i in range(0, len(given), 4)),
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
         "usage": {"output_tokens": 12}},
        {"type": "message_stop"},
    ]  # fmt: skip
    assembler = MESSAGES.assembler()
    for event in events:
        assembler.feed(f"event: {event['type']}")
        assembler.feed("data: " + json.dumps(event))
        assembler.feed("")
    message = assembler.answer().document
    assert message["content"] == [
        {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 3}}
    ]
    assert message["usage"] == {"input_tokens": 30, "output_tokens": 12}
    assert message["stop_reason"] == "tool_use"


def test_a_streamed_answer_is_its_own_not_the_assemblers() -> None:
    """The answer is recorded as the stream stood when it was read: a later event changes
    the assembler's blocks, never an answer it gave."""
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {**_BASE, "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "4"}},
        {"type": "message_stop"},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "2"}},
    ]
    assembler = MESSAGES.assembler()
    for event in events[:-1]:
        assembler.feed("data: " + json.dumps(event))
    answer = assembler.answer()
    assembler.feed("data: " + json.dumps(events[-1]))
    assert answer.document["content"] == [{"type": "text", "text": "4"}]


def test_a_whole_answer_keeps_the_body_it_is_given() -> None:
    """Not a copy (the proxy's body is freshly decoded; a deep copy was ~2 % of its CPU)."""
    body = {**_BASE, "content": [{"type": "text", "text": "5"}]}
    assert MESSAGES.answer(body).document["content"] is body["content"]


def test_errors_are_anthropics_shape() -> None:
    assert MESSAGES.error_body(400, "no such request", "model_replay_miss") == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "no such request"},
    }
    assert MESSAGES.error_body(502, "down", "unreachable")["error"] == {
        "type": "api_error", "message": "down"
    }  # fmt: skip
    upstream = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
    assert MESSAGES.error_fields(upstream) == {"type": "overloaded_error"}


def test_the_key_goes_as_x_api_key_with_the_clients_version() -> None:
    sent = {"anthropic-version": "2026-10-21", "anthropic-beta": "b1", "authorization": "x"}
    assert MESSAGES.egress_headers("sk-ant", sent) == {
        "anthropic-version": "2026-10-21",
        "anthropic-beta": "b1",
        "x-api-key": "sk-ant",
    }
    # The API requires a version: a client that sent none gets the first one.
    assert MESSAGES.egress_headers(None, {}) == {"anthropic-version": "2023-06-01"}
    assert (MESSAGES.provider, MESSAGES.upstream_path) == ("anthropic", "/v1/messages")
