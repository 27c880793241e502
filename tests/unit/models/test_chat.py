"""models/chat.py: Chat Completions requests, answers whole and streamed, and their replay."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import JsonValue

from wopeval import models
from wopeval.models import CHAT

from ._sdk import lines, openai_client

REQUEST: dict[str, JsonValue] = {
    "model": "gpt-test",
    "messages": [{"role": "user", "content": "add 2 and 3"}],
}
TOOL_CALLS: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-test-0001",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_0", "type": "function",
                     "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}},
                    {"id": "call_1", "type": "function",
                     "function": {"name": "look_up", "arguments": '{"order": "A-1"}'}},
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19},
}  # fmt: skip
TEXT: dict[str, Any] = {
    **TOOL_CALLS,
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "The sum is 5.", "refusal": None},
            "finish_reason": "stop",
        }
    ],
}
ANSWERS = pytest.mark.parametrize("body", [TOOL_CALLS, TEXT], ids=["tool-calls", "text"])


def test_a_request_needs_messages_and_its_transport_keys_are_not_its_identity() -> None:
    with pytest.raises(models.InvalidModelRequest, match="messages"):
        CHAT.parse({"model": "m"})
    with pytest.raises(models.InvalidModelRequest, match="JSON object"):
        CHAT.parse([REQUEST])
    streamed = CHAT.parse({**REQUEST, "stream": True, "stream_options": {"include_usage": True}})
    assert streamed.stream
    assert streamed.canonical() == REQUEST
    assert not CHAT.parse(REQUEST).stream


@ANSWERS
def test_a_whole_answer_is_recorded_normalised_and_replayed_to_the_sdk(body: Any) -> None:
    answer = CHAT.answer(body)
    assert CHAT.usage(answer) == models.Usage(12, 7)
    assert CHAT.reported_model(answer) == "gpt-test-0001"
    request = CHAT.parse(REQUEST)
    replayed = openai_client(request, answer).chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": "add 2 and 3"}]
    )
    assert CHAT.answer(replayed.model_dump(mode="json")) == answer


@ANSWERS
def test_a_replayed_stream_reads_in_the_sdk_as_the_recorded_answer(body: Any) -> None:
    answer = CHAT.answer(body)
    request = CHAT.parse({**REQUEST, "stream": True, "stream_options": {"include_usage": True}})
    client = openai_client(request, answer)
    with client.chat.completions.stream(
        model="gpt-test",
        messages=[{"role": "user", "content": "add 2 and 3"}],
        stream_options={"include_usage": True},
    ) as events:
        for _ in events:
            pass
        final = events.get_final_completion()
    assert CHAT.answer(final.model_dump(mode="json")) == answer


@ANSWERS
def test_streamed_deltas_add_up_to_the_recorded_answer(body: Any) -> None:
    answer = CHAT.answer(body)
    assembler = CHAT.assembler()
    streamed = CHAT.parse({**REQUEST, "stream": True, "stream_options": {"include_usage": True}})
    for line in lines(CHAT.served_stream(answer, streamed)):
        assembler.feed(line)
    assert assembler.complete
    assert assembler.answer() == answer


def test_argument_deltas_split_anywhere_are_joined_by_their_index() -> None:
    arguments = '{"a": 2, "b": 3}'
    chunks = [
        {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant"}}]},
        *(
            {"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 0, **({"id": "call_0", "function": {"name": "add"}} if i == 0 else {}),
                 "function": {"arguments": arguments[i : i + 3],
                              **({"name": "add"} if i == 0 else {})}}]}}]}
            for i in range(0, len(arguments), 3)
        ),
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]  # fmt: skip
    assembler = CHAT.assembler()
    for chunk in chunks[:-1]:
        assembler.feed("data: " + json.dumps(chunk))
    assert not assembler.complete, "no finish reason yet: a cut stream is not an answer"
    assembler.feed("data: " + json.dumps(chunks[-1]))
    assembler.feed("data: [DONE]")
    read = models.ChatAnswer(assembler.answer().document)
    assert [(c.call_id, c.name, c.arguments) for c in read.tool_calls] == [
        ("call_0", "add", arguments)
    ]


def test_errors_are_openais_shape_and_the_key_goes_as_a_bearer_token() -> None:
    assert CHAT.error_body(400, "no", "model_replay_miss") == {
        "error": {"message": "no", "type": "invalid_request_error", "code": "model_replay_miss"}
    }
    upstream = {"error": {"message": "sk-abc is wrong", "type": "auth", "code": "invalid_key"}}
    assert CHAT.error_fields(upstream) == {"type": "auth", "code": "invalid_key"}
    assert CHAT.error_fields("not json") == {}
    assert CHAT.egress_headers("sk-real", {"x-api-key": "token"}) == {
        "Authorization": "Bearer sk-real"
    }
    assert CHAT.egress_headers(None, {}) == {}
