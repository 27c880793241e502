"""OpenAI Responses on the stand-in: the official SDK's tool loop by item list and by
`previous_response_id`, whole and streamed (events named and numbered as OpenAI's), and
every refusal OpenAI makes that the stand-in must make too."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from openai.types.responses import FunctionToolParam, ResponseFunctionToolCall

from _model_server import REPORTED_SUFFIX, ModelServer

from .conftest import ADD_PARAMETERS, ADD_TURNS, KEY, OPENAI_HEADERS, question

ADD: FunctionToolParam = {
    "type": "function",
    "name": "add",
    "description": "Add.",
    "parameters": ADD_PARAMETERS,
    "strict": False,
}


@pytest.fixture
def client(server: ModelServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0) as sdk:
        yield sdk


def _call(output: list[Any]) -> ResponseFunctionToolCall:
    (call,) = output
    assert isinstance(call, ResponseFunctionToolCall)
    return call


def test_the_sdk_runs_a_tool_loop_on_an_item_list(
    server: ModelServer, client: openai.OpenAI
) -> None:
    asked = question("items")
    server.script.add(asked, ADD_TURNS, system_contains="You add")

    first = client.responses.create(
        model="gpt-x", instructions="You add.", input=asked, tools=[ADD], store=False
    )

    assert (first.model, first.status) == ("gpt-x" + REPORTED_SUFFIX, "completed")
    call = _call(first.output)
    assert (call.call_id, call.name, json.loads(call.arguments)) == (
        "call_0_0",
        "add",
        {"a": 2, "b": 3},
    )
    second = client.responses.create(
        model="gpt-x",
        instructions="You add.",
        tools=[ADD],
        input=[
            {"role": "user", "content": asked},
            call.model_dump(exclude_none=True),  # type: ignore[list-item]
            {"type": "function_call_output", "call_id": call.call_id, "output": "5"},
        ],
    )
    assert second.output_text == "The sum is 5."
    assert second.usage is not None
    usage = second.usage
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens > 0


def test_one_answers_several_calls_are_one_turn(server: ModelServer, client: openai.OpenAI) -> None:
    """The items of one answer (here two function calls) count as one model turn."""
    asked = question("parallel")
    both = [{"name": "add", "arguments": {"a": 1, "b": 1}}, {"name": "add", "arguments": {}}]
    server.script.add(asked, [{"tool_calls": both}, {"content": "done"}])
    first = client.responses.create(model="gpt-x", input=asked, tools=[ADD], store=False)
    calls = [c for c in first.output if isinstance(c, ResponseFunctionToolCall)]
    assert [c.call_id for c in calls] == ["call_0_0", "call_0_1"]
    items: list[Any] = [{"role": "user", "content": asked}, *[c.model_dump() for c in calls]]
    items += [{"type": "function_call_output", "call_id": c.call_id, "output": "2"} for c in calls]
    second = client.responses.create(model="gpt-x", tools=[ADD], input=items)
    assert second.output_text == "done"


def test_previous_response_id_continues_a_stored_response(
    server: ModelServer, client: openai.OpenAI
) -> None:
    asked = question("previous")
    server.script.add(asked, ADD_TURNS)
    first = client.responses.create(model="gpt-x", input=asked, tools=[ADD])
    call = _call(first.output)

    second = client.responses.create(
        model="gpt-x",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "5"}],
        tools=[ADD],
    )

    assert second.previous_response_id == first.id
    assert second.output_text == "The sum is 5."


def test_the_sdk_streams_events_as_openai_names_and_numbers_them(
    server: ModelServer, client: openai.OpenAI
) -> None:
    asked = question("stream")
    server.script.add(asked, ADD_TURNS)
    with client.responses.stream(model="gpt-x", input=asked, tools=[ADD]) as events:
        called = list(events)
        first = events.get_final_response()
    call = _call(first.output)
    arguments = "".join(
        e.delta for e in called if e.type == "response.function_call_arguments.delta"
    )
    assert json.loads(arguments) == {"a": 2, "b": 3} == json.loads(call.arguments)

    answered = list(
        client.responses.create(
            model="gpt-x",
            previous_response_id=first.id,
            input=[{"type": "function_call_output", "call_id": call.call_id, "output": "5"}],
            tools=[ADD],
            stream=True,
        )
    )

    assert [e.type for e in called] == [
        "response.created", "response.in_progress", "response.output_item.added",
        *["response.function_call_arguments.delta"] * 4,
        "response.function_call_arguments.done", "response.output_item.done",
        "response.completed",
    ]  # fmt: skip
    assert [e.type for e in answered] == [
        "response.created", "response.in_progress", "response.output_item.added",
        "response.content_part.added", *["response.output_text.delta"] * 5,
        "response.output_text.done", "response.content_part.done",
        "response.output_item.done", "response.completed",
    ]  # fmt: skip
    for stream in (called, answered):
        assert [e.sequence_number for e in stream] == list(range(len(stream)))
    text = "".join(e.delta for e in answered if e.type == "response.output_text.delta")
    assert text == "The sum is 5."
    completed = answered[-1]
    assert completed.type == "response.completed"
    assert completed.response.output_text == text


def test_the_raw_stream_names_each_event_on_its_event_line(
    server: ModelServer, http: httpx.Client
) -> None:
    asked = question("raw")
    server.script.add(asked, [{"content": "ok"}])
    body = {"model": "m", "input": asked, "stream": True}
    answer = http.post("/v1/responses", json=body, headers=OPENAI_HEADERS)
    assert answer.headers["content-type"].startswith("text/event-stream")
    frames = [f for f in answer.text.split("\n\n") if f]
    for frame in frames:
        event, data = frame.split("\n")
        assert event.removeprefix("event: ") == json.loads(data.removeprefix("data: "))["type"]


def test_a_length_turn_is_an_incomplete_response(
    server: ModelServer, client: openai.OpenAI
) -> None:
    asked = question("length")
    server.script.add(asked, [{"content": "cut", "finish_reason": "length"}])
    answer = client.responses.create(model="gpt-x", input=asked)
    assert answer.status == "incomplete"
    assert answer.incomplete_details is not None
    assert answer.incomplete_details.reason == "max_output_tokens"


def test_a_request_without_a_key_is_401(http: httpx.Client) -> None:
    answer = http.post("/v1/responses", json={"model": "m", "input": "hi"})
    assert answer.status_code == 401
    assert "API key" in answer.json()["error"]["message"]


def test_a_response_stored_with_store_false_cannot_be_continued(
    server: ModelServer, http: httpx.Client
) -> None:
    asked = question("unstored")
    server.script.add(asked, [{"content": "one"}, {"content": "two"}])
    first = http.post(
        "/v1/responses", json={"model": "m", "input": asked, "store": False}, headers=OPENAI_HEADERS
    ).json()
    body = {"model": "m", "input": "more", "previous_response_id": first["id"]}
    answer = http.post("/v1/responses", json=body, headers=OPENAI_HEADERS)
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "previous_response_not_found"


CALL = {"type": "function_call", "call_id": "call_a", "name": "add", "arguments": "{}"}
OUTPUT = {"type": "function_call_output", "call_id": "call_a", "output": "1"}
USER = {"role": "user", "content": "hi"}


def _tool(name: str) -> dict[str, Any]:
    return {"type": "function", "name": name, "parameters": ADD_PARAMETERS}


REFUSALS: dict[str, tuple[dict[str, Any], str | None, str | None, str]] = {
    # case: (body, param, code, a phrase of the message)
    "no-model": ({"input": "hi"}, "model", "missing_required_parameter", "'model'"),
    "no-input": ({"model": "m"}, "input", "missing_required_parameter", "'input'"),
    "unknown-role": (
        {"model": "m", "input": [{"role": "robot", "content": "x"}]},
        "input[0].role", "invalid_value", "'robot'",
    ),
    "output-without-call-id": (
        {"model": "m", "input": [USER, CALL, {"type": "function_call_output", "output": "1"}]},
        "input[2].call_id", "missing_required_parameter", "'input[2].call_id'",
    ),
    "output-as-an-object": (
        {"model": "m", "input": [USER, CALL, {**OUTPUT, "output": {"sum": 1}}]},
        "input[2].output", "invalid_type", "expected one of a string or array of objects",
    ),
    "arguments-as-an-object": (
        {"model": "m", "input": [USER, {**CALL, "arguments": {"a": 1}}, OUTPUT]},
        "input[1].arguments", "invalid_type", "expected a string",
    ),
    "colon-in-tool-name": (
        {"model": "m", "input": "hi", "tools": [_tool("orders:lookup")]},
        "tools[0].name", "invalid_value", "^[a-zA-Z0-9_-]+$",
    ),
    "tool-name-over-64": (
        {"model": "m", "input": "hi", "tools": [_tool("a" * 65)]},
        "tools[0].name", "string_above_max_length", "maximum length 64",
    ),
    "output-for-an-unknown-call": (
        {"model": "m", "input": [USER, CALL, OUTPUT, {**OUTPUT, "call_id": "call_zz"}]},
        "input", None, "No tool call found for function call output with call_id call_zz",
    ),
    "call-without-output": (
        {"model": "m", "input": [USER, CALL, USER]},
        "input", None, "No tool output found for function call call_a",
    ),
    "unknown-previous-response": (
        {"model": "m", "input": "hi", "previous_response_id": "resp_unknown"},
        "previous_response_id", "previous_response_not_found", "'resp_unknown' not found",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", REFUSALS)
def test_openai_refuses_it_so_the_stand_in_does(
    server: ModelServer, http: httpx.Client, case: str
) -> None:
    body, param, code, phrase = REFUSALS[case]
    server.script.add("hi", [{"content": "answered"}] * 3)
    answer = http.post("/v1/responses", json=body, headers=OPENAI_HEADERS)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert (error["type"], error["param"], error["code"]) == ("invalid_request_error", param, code)
    assert phrase in error["message"]
