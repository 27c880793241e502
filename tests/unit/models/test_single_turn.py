"""Each adapter's one-turn request (what a rubric judge asks) is one the strict stand-in
accepts over real HTTP, and the adapter reads the text of its answer back."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from _model_server import ModelServer
from wopeval import models
from wopeval.models import CHAT, MESSAGES, RESPONSES

SYSTEM = "You are the adapter test's judge."
USER = "The output under judgement."
ANSWER = '{"criteria": []}'


@pytest.fixture(scope="module")
def server() -> Iterator[ModelServer]:
    with ModelServer() as running:
        running.script.add(USER, [{"content": ANSWER}], system_contains=SYSTEM)
        yield running


@pytest.mark.parametrize("api", [CHAT, RESPONSES, MESSAGES], ids=lambda api: api.name)
def test_a_single_turn_request_is_accepted_and_its_text_read(
    server: ModelServer, api: models.ModelApi
) -> None:
    body = api.single_turn("judge-mini", SYSTEM, USER, max_tokens=64, temperature=0.0)
    base = server.root_url if api.provider == "anthropic" else server.base_url
    headers = api.egress_headers("sk-unit", {})
    response = httpx.post(base + api.upstream_path, json=body, headers=headers, trust_env=False)
    assert response.status_code == 200, response.text
    answer = api.answer(response.json())
    assert api.answer_text(answer) == ANSWER
    assert api.usage(answer) is not None


def test_an_answer_without_text_reads_as_none() -> None:
    assert CHAT.answer_text(models.ModelAnswer({"content": None})) is None
    assert RESPONSES.answer_text(models.ModelAnswer({"output": [{"type": "reasoning"}]})) is None
    assert MESSAGES.answer_text(models.ModelAnswer({"content": [{"type": "tool_use"}]})) is None
