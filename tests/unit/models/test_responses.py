"""models/responses.py: Responses requests, answers whole and streamed, and their replay."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from pydantic import JsonValue

from wopeval import models
from wopeval.models import RESPONSES

from ._sdk import lines, openai_client

REQUEST: dict[str, JsonValue] = {"model": "gpt-test", "input": "add 2 and 3"}
_BASE: dict[str, Any] = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1_700_000_000,
    "status": "completed",
    "model": "gpt-test-0001",
    "error": None,
    "incomplete_details": None,
    "instructions": None,
    "metadata": {},
    "parallel_tool_calls": True,
    "temperature": 1.0,
    "tool_choice": "auto",
    "tools": [],
    "top_p": 1.0,
    "usage": {
        "input_tokens": 20,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 9,
        "output_tokens_details": {"reasoning_tokens": 4},
        "total_tokens": 29,
    },
}
FUNCTION_CALL: dict[str, Any] = {
    **_BASE,
    "output": [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "add",
         "arguments": '{"a":2,"b":3}', "status": "completed"},
    ],
}  # fmt: skip
TEXT: dict[str, Any] = {
    **_BASE,
    "id": "resp_2",
    "output": [
        {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
         "content": [{"type": "output_text", "text": "The sum is 5.", "annotations": [],
                      "logprobs": []}]},
    ],
}  # fmt: skip
ANSWERS = pytest.mark.parametrize("body", [FUNCTION_CALL, TEXT], ids=["function-call", "text"])


def test_a_request_needs_a_model_and_input_of_its_shape() -> None:
    with pytest.raises(models.InvalidModelRequest, match="model"):
        RESPONSES.parse({"input": "x"})
    with pytest.raises(models.InvalidModelRequest, match="input"):
        RESPONSES.parse({"model": "m", "input": 3})
    chained = {**REQUEST, "previous_response_id": "resp_1", "stream": True}
    request = RESPONSES.parse(chained)
    assert request.stream
    # What the agent sent is its identity, the conversation's id included; not its transport.
    assert request.canonical() == {**REQUEST, "previous_response_id": "resp_1"}
    assert request.canonical() != RESPONSES.parse(REQUEST).canonical()


def test_a_body_that_is_not_a_response_is_no_answer() -> None:
    with pytest.raises(ValueError, match="not a response"):
        RESPONSES.answer({"object": "chat.completion", "choices": []})


def test_a_whole_answer_keeps_the_body_it_is_given() -> None:
    """Not a copy (the proxy's body is freshly decoded; a deep copy was ~2 % of its CPU)."""
    body = {**TEXT, "output": list(TEXT["output"])}
    assert RESPONSES.answer(body).document["output"] is body["output"]


@ANSWERS
def test_a_whole_answer_is_recorded_as_returned_and_replayed_to_the_sdk(body: Any) -> None:
    answer = RESPONSES.answer(body)
    assert answer.document == body
    assert RESPONSES.usage(answer) == models.Usage(20, 9)
    assert RESPONSES.reported_model(answer) == "gpt-test-0001"
    replayed = openai_client(RESPONSES.parse(REQUEST), answer).responses.create(
        model="gpt-test", input="add 2 and 3"
    )
    assert replayed.id == body["id"]
    assert [item.model_dump(mode="json", exclude_none=True) for item in replayed.output] == [
        {key: value for key, value in item.items() if value is not None} for item in body["output"]
    ]


@ANSWERS
def test_a_replayed_stream_reads_in_the_sdk_as_the_recorded_answer(body: Any) -> None:
    answer = RESPONSES.answer(body)
    client = openai_client(RESPONSES.parse({**REQUEST, "stream": True}), answer)
    with client.responses.stream(model="gpt-test", input="add 2 and 3") as events:
        kinds = [event.type for event in events]
        final = events.get_final_response()
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert final.id == body["id"]
    assert final.output_text == ("The sum is 5." if body is TEXT else "")
    calls = [item for item in final.output if item.type == "function_call"]
    assert [(c.call_id, c.name, c.arguments) for c in calls] == [
        (item["call_id"], item["name"], item["arguments"])
        for item in body["output"]
        if item["type"] == "function_call"
    ]


@ANSWERS
def test_streamed_events_add_up_to_the_recorded_answer(body: Any) -> None:
    answer = RESPONSES.answer(body)
    request = RESPONSES.parse({**REQUEST, "stream": True})
    assembler = RESPONSES.assembler()
    events = lines(RESPONSES.served_stream(answer, request))
    for line in events[:-4]:
        assembler.feed(line)
    assert not assembler.complete, "no response.completed yet: a cut stream is not an answer"
    for line in events[-4:]:
        assembler.feed(line)
    assert assembler.complete
    assert assembler.answer() == answer


def test_items_a_server_left_out_of_its_completed_event_come_from_their_done_events() -> None:
    answer = RESPONSES.answer(FUNCTION_CALL)
    assembler = RESPONSES.assembler()
    for line in lines(RESPONSES.served_stream(answer, RESPONSES.parse(REQUEST))):
        event = json.loads(line[5:]) if line.startswith("data:") else None
        if event is not None and event["type"] == "response.completed":
            bare = copy.deepcopy(event)
            del bare["response"]["output"]
            line = "data: " + json.dumps(bare)
        assembler.feed(line)
    assert assembler.answer() == answer


def test_an_incomplete_answer_is_replayed_as_incomplete() -> None:
    cut = {**TEXT, "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}
    events = lines(RESPONSES.served_stream(RESPONSES.answer(cut), RESPONSES.parse(REQUEST)))
    assert "event: response.incomplete" in events
    assembler = RESPONSES.assembler()
    for line in events:
        assembler.feed(line)
    assert assembler.answer().document == cut


def test_errors_are_openais_shape_and_the_key_goes_as_a_bearer_token() -> None:
    assert RESPONSES.error_body(502, "down", "unreachable")["error"] == {
        "message": "down", "type": "api_error", "code": "unreachable"
    }  # fmt: skip
    assert RESPONSES.egress_headers("sk-real", {}) == {"Authorization": "Bearer sk-real"}
    assert RESPONSES.provider == "openai"
    assert RESPONSES.upstream_path == "/responses"
