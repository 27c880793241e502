"""Anthropic Messages on the stand-in: the official SDK's tool loop, whole and streamed
(events under their `event:` lines), the credential and version headers, and every refusal
Anthropic makes that the stand-in must make too, in Anthropic's error shape."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import pytest
from anthropic.types import (
    MessageParam,
    TextBlock,
    ToolParam,
    ToolResultBlockParam,
    ToolUseBlock,
)

from _model_server import REPORTED_SUFFIX, ModelServer

from .conftest import ADD_PARAMETERS, ADD_TURNS, ANTHROPIC_HEADERS, KEY, question

ADD: ToolParam = {"name": "add", "description": "Add.", "input_schema": ADD_PARAMETERS}


@pytest.fixture
def client(server: ModelServer) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(base_url=server.root_url, api_key=KEY, max_retries=0) as sdk:
        yield sdk


def _tool_use(content: list[Any]) -> ToolUseBlock:
    (block,) = content
    assert isinstance(block, ToolUseBlock)
    return block


def _answered(asked: str, use: ToolUseBlock) -> list[MessageParam]:
    result: ToolResultBlockParam = {"type": "tool_result", "tool_use_id": use.id, "content": "5"}
    return [
        {"role": "user", "content": asked},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [result]},
    ]


def test_the_sdk_runs_a_whole_tool_loop(server: ModelServer, client: anthropic.Anthropic) -> None:
    asked = question("add")
    server.script.add(asked, ADD_TURNS, system_contains="You add")
    system = [{"type": "text", "text": "You add."}]

    first = client.messages.create(
        model="claude-x",
        max_tokens=100,
        system=system,  # type: ignore[arg-type]
        tools=[ADD],
        messages=[{"role": "user", "content": asked}],
    )

    assert (first.model, first.stop_reason) == ("claude-x" + REPORTED_SUFFIX, "tool_use")
    use = _tool_use(first.content)
    assert (use.id, use.name, use.input) == ("toolu_0_0", "add", {"a": 2, "b": 3})
    second = client.messages.create(
        model="claude-x",
        max_tokens=100,
        system=system,  # type: ignore[arg-type]
        tools=[ADD],
        messages=_answered(asked, use),
    )
    assert second.stop_reason == "end_turn"
    assert [b.text for b in second.content if isinstance(b, TextBlock)] == ["The sum is 5."]
    assert second.usage.input_tokens > 0
    assert second.usage.output_tokens > 0
    (received, _) = server.script.requests_with(asked)
    assert received.headers["anthropic-version"]
    assert KEY in (
        received.headers.get("x-api-key"),
        (received.authorization or "").removeprefix("Bearer "),
    )


def test_the_sdk_streams_text_and_input_json_deltas(
    server: ModelServer, client: anthropic.Anthropic
) -> None:
    asked = question("stream")
    server.script.add(asked, ADD_TURNS)
    request: dict[str, Any] = {"model": "claude-x", "max_tokens": 100, "tools": [ADD]}
    with client.messages.stream(**request, messages=[{"role": "user", "content": asked}]) as events:
        called = list(events)
        first = events.get_final_message()
    use = _tool_use(first.content)
    assert use.input == {"a": 2, "b": 3}
    assert sum(1 for e in called if e.type == "input_json") > 1, "the input comes in pieces"

    with client.messages.stream(**request, messages=_answered(asked, use)) as events:
        texts = [e.text for e in events if e.type == "text"]
        second = events.get_final_message()
    assert len(texts) > 1
    assert "".join(texts) == "The sum is 5."
    assert second.stop_reason == "end_turn"


def test_the_raw_stream_sends_anthropics_events_under_their_names(
    server: ModelServer, http: httpx.Client
) -> None:
    asked = question("raw")
    server.script.add(asked, [{"content": "ok", "finish_reason": "length"}])
    body = {"model": "m", "max_tokens": 5, "stream": True,
            "messages": [{"role": "user", "content": asked}]}  # fmt: skip
    answer = http.post("/v1/messages", json=body, headers=ANTHROPIC_HEADERS)
    frames = [f.split("\n") for f in answer.text.split("\n\n") if f]
    names = [event.removeprefix("event: ") for event, _ in frames]
    datas = [json.loads(data.removeprefix("data: ")) for _, data in frames]
    assert names == [d["type"] for d in datas] == [
        "message_start", "content_block_start", "content_block_delta", "content_block_stop",
        "message_delta", "message_stop",
    ]  # fmt: skip
    assert datas[4]["delta"]["stop_reason"] == "max_tokens"


def test_an_auth_token_and_consecutive_user_messages_are_accepted(
    server: ModelServer,
) -> None:
    """The SDK sends an auth token as `Authorization: Bearer`; Anthropic combines
    consecutive messages of one role into one turn (its API reference says so)."""
    asked = question("token")
    server.script.add(asked, [{"content": "one"}, {"content": "two"}])
    with anthropic.Anthropic(base_url=server.root_url, auth_token=KEY, max_retries=0) as sdk:
        answer = sdk.messages.create(
            model="claude-x",
            max_tokens=10,
            messages=[
                {"role": "user", "content": asked},
                {"role": "assistant", "content": "one"},
                {"role": "user", "content": "and"},
                {"role": "user", "content": [{"type": "text", "text": "then?"}]},
            ],
        )
    assert [b.text for b in answer.content if isinstance(b, TextBlock)] == ["two"]


def test_scripted_failures_are_in_anthropics_shape(
    server: ModelServer, client: anthropic.Anthropic
) -> None:
    asked = question("fail")
    failing = [{"status": 429, "retry_after": "0"}, {"status": 529}]
    server.script.add(asked, [{"content": "ok", "fail_first": failing}])
    messages: list[MessageParam] = [{"role": "user", "content": asked}]
    with pytest.raises(anthropic.RateLimitError) as limited:
        client.messages.create(model="claude-x", max_tokens=10, messages=messages)
    assert limited.value.response.headers["retry-after"] == "0"
    assert limited.value.response.json()["error"] == {
        "type": "rate_limit_error",
        "message": "scripted 429",
    }
    with pytest.raises(anthropic.APIStatusError) as overloaded:
        client.messages.create(model="claude-x", max_tokens=10, messages=messages)
    assert overloaded.value.status_code == 529
    assert overloaded.value.response.json()["error"]["type"] == "overloaded_error"
    answer = client.messages.create(model="claude-x", max_tokens=10, messages=messages)
    assert answer.stop_reason == "end_turn"


def test_what_the_script_cannot_play_says_why_in_anthropics_shape(http: httpx.Client) -> None:
    body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "?!"}]}
    answer = http.post("/v1/messages", json=body, headers=ANTHROPIC_HEADERS)
    assert answer.status_code == 400
    assert answer.json()["error"] == {
        "type": "invalid_request_error",
        "message": "no script for this conversation (unscripted)",
    }


BODY = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize(
    ("headers", "status", "kind", "phrase"),
    [
        ({"anthropic-version": "2023-06-01"}, 401, "authentication_error", "x-api-key"),
        ({"x-api-key": KEY}, 400, "invalid_request_error", "anthropic-version"),
    ],
    ids=["no-key", "no-version"],
)
def test_the_credential_and_version_headers_are_required(
    server: ModelServer,
    http: httpx.Client,
    headers: dict[str, str],
    status: int,
    kind: str,
    phrase: str,
) -> None:
    server.script.add("hi", [{"content": "answered"}])
    answer = http.post("/v1/messages", json=BODY, headers=headers)
    assert answer.status_code == status
    assert answer.json()["type"] == "error"
    assert answer.json()["error"]["type"] == kind
    assert phrase in answer.json()["error"]["message"]


USER = {"role": "user", "content": "hi"}
USE = {"role": "assistant", "content": [
    {"type": "tool_use", "id": "toolu_a", "name": "add", "input": {}}]}  # fmt: skip


def _result(*ids: str) -> dict[str, Any]:
    return {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": i, "content": "1"} for i in ids]}  # fmt: skip


def _tools(tool: dict[str, Any]) -> dict[str, Any]:
    return {**BODY, "tools": [tool]}


REFUSALS: dict[str, tuple[dict[str, Any], str]] = {
    "no-model": ({"max_tokens": 10, "messages": [USER]}, "model: Field required"),
    "no-max-tokens": ({"model": "m", "messages": [USER]}, "max_tokens: Field required"),
    "no-messages": ({"model": "m", "max_tokens": 10}, "messages: Field required"),
    "zero-max-tokens": ({**BODY, "max_tokens": 0}, "max_tokens: Input should be"),
    "no-message": ({**BODY, "messages": []}, "at least one message"),
    "system-role-in-messages": (
        {**BODY, "messages": [{"role": "system", "content": "x"}, USER]},
        "messages.0.role: Input should be 'user' or 'assistant'",
    ),
    "assistant-first": (
        {**BODY, "messages": [{"role": "assistant", "content": "x"}, USER]},
        'first message must use the "user" role',
    ),
    "colon-in-tool-name": (
        _tools({"name": "orders:lookup", "input_schema": ADD_PARAMETERS}),
        "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'",
    ),
    "tool-name-over-64": (
        _tools({"name": "a" * 65, "input_schema": ADD_PARAMETERS}),
        "tools.0.custom.name: String should match pattern",
    ),
    "tool-without-input-schema": (
        _tools({"name": "add"}), "tools.0.custom.input_schema: Field required",
    ),
    "result-for-an-unknown-call": (
        {**BODY, "messages": [USER, USE, _result("toolu_a", "toolu_zz")]},
        "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_zz",
    ),
    "result-with-no-call-before": (
        {**BODY, "messages": [USER, {"role": "assistant", "content": "x"}, _result("toolu_a")]},
        "messages.2.content.0: unexpected `tool_use_id`",
    ),
    "unanswered-tool-use": (
        {**BODY, "messages": [USER, USE, USER]},
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
        "toolu_a",
    ),
    "result-content-as-an-object": (
        {**BODY, "messages": [USER, USE, {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": {"sum": 1}}]}]},
        "messages.2.content.0.tool_result.content: Input should be a valid string or a list",
    ),
    "result-without-its-id": (
        {**BODY, "messages": [USER, USE, {"role": "user", "content": [
            {"type": "tool_result", "content": "1"}]}]},
        "messages.2.content.0.tool_result.tool_use_id: Field required",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", REFUSALS)
def test_anthropic_refuses_it_so_the_stand_in_does(
    server: ModelServer, http: httpx.Client, case: str
) -> None:
    body, phrase = REFUSALS[case]
    server.script.add("hi", [{"content": "answered"}] * 3)
    answer = http.post("/v1/messages", json=body, headers=ANTHROPIC_HEADERS)
    assert answer.status_code == 400, answer.text
    assert answer.json()["type"] == "error"
    assert answer.json()["error"]["type"] == "invalid_request_error"
    assert phrase in answer.json()["error"]["message"]
