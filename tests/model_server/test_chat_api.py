"""Chat Completions on the stand-in: the official SDK's tool loop, whole and streamed, the
scripted failures, and every refusal OpenAI makes that the stand-in must make too."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionMessageParam

from _model_server import REPORTED_SUFFIX, ModelServer

from .conftest import ADD_PARAMETERS, ADD_TURNS, KEY, OPENAI_HEADERS, question

ADD: ChatCompletionFunctionToolParam = {
    "type": "function",
    "function": {"name": "add", "description": "Add.", "parameters": ADD_PARAMETERS},
}


@pytest.fixture
def client(server: ModelServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0) as sdk:
        yield sdk


def test_the_sdk_runs_a_whole_tool_loop(server: ModelServer, client: openai.OpenAI) -> None:
    asked = question("add")
    server.script.add(asked, ADD_TURNS)
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": asked}]

    first = client.chat.completions.create(model="gpt-x", messages=messages, tools=[ADD])

    assert first.model == "gpt-x" + REPORTED_SUFFIX
    assert first.choices[0].finish_reason == "tool_calls"
    (call,) = first.choices[0].message.tool_calls or []
    assert call.type == "function"
    assert (call.id, call.function.name) == ("call_0_0", "add")
    assert json.loads(call.function.arguments) == {"a": 2, "b": 3}
    messages.append(first.choices[0].message.model_dump(exclude_none=True))  # type: ignore[arg-type]
    messages.append({"role": "tool", "tool_call_id": call.id, "content": "5"})
    second = client.chat.completions.create(model="gpt-x", messages=messages, tools=[ADD])
    assert second.choices[0].message.content == "The sum is 5."
    assert second.choices[0].finish_reason == "stop"
    assert second.usage is not None
    assert second.usage.total_tokens > 0
    assert [r.authorization for r in server.script.requests_with(asked)] == [f"Bearer {KEY}"] * 2


def test_the_sdk_streams_tool_call_argument_deltas_and_the_usage(
    server: ModelServer, client: openai.OpenAI
) -> None:
    asked = question("stream")
    server.script.add(asked, ADD_TURNS)
    with client.chat.completions.stream(
        model="gpt-x",
        messages=[{"role": "user", "content": asked}],
        tools=[ADD],
        stream_options={"include_usage": True},
    ) as events:
        deltas = [e for e in events if e.type == "tool_calls.function.arguments.delta"]
        final = events.get_final_completion()
    assert len(deltas) > 1, "the arguments come in pieces"
    (call,) = final.choices[0].message.tool_calls or []
    assert json.loads(call.function.arguments) == {"a": 2, "b": 3}
    assert final.usage is not None
    assert final.usage.prompt_tokens > 0


@pytest.mark.parametrize(
    ("turn", "expected"),
    [
        ({"json": {"ok": True}}, {"content": '{"ok":true}', "finish": "stop"}),
        ({"refusal": "No."}, {"refusal": "No.", "finish": "stop"}),
        ({"content": "cut", "finish_reason": "length"}, {"content": "cut", "finish": "length"}),
    ],
    ids=["json", "refusal", "length"],
)
def test_a_turn_plays_as_scripted(
    server: ModelServer, client: openai.OpenAI, turn: dict[str, Any], expected: dict[str, Any]
) -> None:
    asked = question("turn")
    server.script.add(asked, [turn])
    answer = client.chat.completions.create(
        model="gpt-x", messages=[{"role": "user", "content": asked}]
    ).choices[0]
    assert answer.finish_reason == expected["finish"]
    assert answer.message.content == expected.get("content")
    assert answer.message.refusal == expected.get("refusal")


def test_the_system_prompt_picks_between_conversations_of_one_question(
    server: ModelServer, client: openai.OpenAI
) -> None:
    asked = question("system")
    server.script.add(asked, [{"content": "plain"}])
    server.script.add(asked, [{"content": "careful"}], system_contains="Be careful")

    def answer(system: str) -> str | None:
        return (
            client.chat.completions.create(
                model="gpt-x",
                messages=[
                    {"role": "system", "content": system},
                    {"role": "user", "content": asked},
                ],
            )
            .choices[0]
            .message.content
        )

    assert answer("You are terse. Be careful.") == "careful"
    assert answer("You are terse.") == "plain"


def test_scripted_failures_come_first_then_the_turn(
    server: ModelServer, client: openai.OpenAI
) -> None:
    asked = question("fail")
    limited = {"content": "ok", "fail_first": [{"status": 429, "retry_after": "0"}]}
    server.script.add(asked, [limited])
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": asked}]
    with pytest.raises(openai.RateLimitError) as refused:
        client.chat.completions.create(model="gpt-x", messages=messages)
    assert refused.value.response.headers["retry-after"] == "0"
    answer = client.chat.completions.create(model="gpt-x", messages=messages)
    assert answer.choices[0].message.content == "ok"

    broken = question("broken")
    server.script.add(broken, [{"content": "never", "fail_always": {"status": 500}}])
    for _ in range(2):
        with pytest.raises(openai.InternalServerError):
            client.chat.completions.create(
                model="gpt-x", messages=[{"role": "user", "content": broken}]
            )


def _post(http: httpx.Client, body: dict[str, Any], **headers: str) -> httpx.Response:
    return http.post("/v1/chat/completions", json=body, headers=headers or OPENAI_HEADERS)


def test_what_the_script_cannot_play_is_a_400_naming_why(
    server: ModelServer, http: httpx.Client
) -> None:
    asked = question("unplayable")
    server.script.add(asked, [ADD_TURNS[0]])
    user = {"role": "user", "content": asked}
    unscripted = _post(http, {"model": "m", "messages": [{"role": "user", "content": "?"}]})
    unoffered = _post(http, {"model": "m", "messages": [user]})
    assistant = {"role": "assistant", "content": "hm"}
    exhausted = _post(http, {"model": "m", "messages": [user, assistant, user]})
    codes = [(r.status_code, r.json()["error"]["code"]) for r in (unscripted, unoffered, exhausted)]
    assert codes == [(400, "unscripted"), (400, "unoffered_tool"), (400, "script_exhausted")]
    assert "add" in unoffered.json()["error"]["message"]


def test_a_request_without_a_key_is_401(http: httpx.Client) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    for headers in ({}, {"Authorization": "Bearer"}, {"Authorization": KEY}):
        answer = http.post("/v1/chat/completions", json=body, headers=headers)
        assert answer.status_code == 401
        assert answer.json()["error"]["type"] == "invalid_request_error"
        assert "API key" in answer.json()["error"]["message"]


USER = {"role": "user", "content": "hi"}
CALL_A = {"id": "call_a", "type": "function", "function": {"name": "add", "arguments": "{}"}}
CALLED = {"role": "assistant", "content": None, "tool_calls": [CALL_A]}


def _tool(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": ADD_PARAMETERS}}


REFUSALS: dict[str, tuple[dict[str, Any], str | None, str | None, str]] = {
    # case: (body, param, code, a phrase of the message)
    "no-model": ({"messages": [USER]}, None, None, "you must provide a model parameter"),
    "no-messages": ({"model": "m"}, "messages", "missing_required_parameter", "'messages'"),
    "empty-messages": ({"model": "m", "messages": []}, "messages", "empty_array", "empty array"),
    "unknown-role": (
        {"model": "m", "messages": [{"role": "robot", "content": "x"}]},
        "messages[0].role", "invalid_value", "'robot'",
    ),
    "colon-in-tool-name": (
        {"model": "m", "messages": [USER], "tools": [_tool("orders:lookup")]},
        "tools[0].function.name", "invalid_value", "^[a-zA-Z0-9_-]+$",
    ),
    "tool-name-over-64": (
        {"model": "m", "messages": [USER], "tools": [_tool("a" * 65)]},
        "tools[0].function.name", "string_above_max_length", "maximum length 64",
    ),
    "tool-without-function": (
        {"model": "m", "messages": [USER], "tools": [{"type": "function"}]},
        "tools[0].function", "missing_required_parameter", "tools[0].function",
    ),
    "tool-message-for-an-unknown-call": (
        {"model": "m", "messages": [USER, CALLED, {"role": "tool", "tool_call_id": "call_a",
         "content": "1"}, {"role": "tool", "tool_call_id": "call_zz", "content": "2"}]},
        "messages.[3].role", None, "must be a response to a preceeding message",
    ),
    "tool-message-with-no-call-before": (
        {"model": "m", "messages": [USER, {"role": "tool", "tool_call_id": "call_a",
         "content": "1"}]},
        "messages.[1].role", None, "must be a response to a preceeding message",
    ),
    "unanswered-tool-call": (
        {"model": "m", "messages": [USER, CALLED, USER]},
        "messages.[1].role", None, "did not have response messages: call_a",
    ),
    "tool-output-as-an-object": (
        {"model": "m", "messages": [USER, CALLED, {"role": "tool", "tool_call_id": "call_a",
         "content": {"sum": 5}}]},
        "messages[2].content", "invalid_type", "expected one of a string or array of objects",
    ),
    "arguments-as-an-object": (
        {"model": "m", "messages": [USER, {**CALLED, "tool_calls": [{**CALL_A, "function": {
         "name": "add", "arguments": {"a": 1}}}]}, {"role": "tool", "tool_call_id": "call_a",
         "content": "1"}]},
        "messages[1].tool_calls[0].function.arguments", "invalid_type", "expected a string",
    ),
    "unanswered-last-tool-call": (
        {"model": "m", "messages": [USER, CALLED]},
        "messages.[1].role", None, "did not have response messages: call_a",
    ),
    "stream-options-without-stream": (
        {"model": "m", "messages": [USER], "stream_options": {"include_usage": True}},
        "stream_options", None, "only allowed when 'stream' is enabled",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", REFUSALS)
def test_openai_refuses_it_so_the_stand_in_does(
    server: ModelServer, http: httpx.Client, case: str
) -> None:
    body, param, code, phrase = REFUSALS[case]
    # Scripted, so that only the refusal stands between the request and an answer.
    server.script.add("hi", [{"content": "answered"}] * 3)
    answer = _post(http, body)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert (error["type"], error["param"], error["code"]) == ("invalid_request_error", param, code)
    assert phrase in error["message"]
