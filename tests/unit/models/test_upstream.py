"""models/_exchange.py: an agent's upstream adds each provider's key to its own API only."""

from __future__ import annotations

from wopeval import models

UPSTREAM = models.ModelUpstream(
    {
        "openai": models.Endpoint("http://openai.test/v1", lambda: "sk-openai"),
        "anthropic": models.Endpoint("http://anthropic.test", lambda: "sk-ant"),
    },
    timeout_seconds=5,
)


def test_each_api_goes_to_its_providers_url_with_only_its_providers_key() -> None:
    sent = {"authorization": "Bearer token", "x-api-key": "token"}
    chat = UPSTREAM.request(models.CHAT.parse({"messages": []}), sent)
    responses = UPSTREAM.request(models.RESPONSES.parse({"model": "m"}), sent)
    messages = UPSTREAM.request(
        models.MESSAGES.parse({"model": "m", "max_tokens": 1, "messages": []}), sent
    )
    assert chat.url == "http://openai.test/v1/chat/completions"
    assert responses.url == "http://openai.test/v1/responses"
    assert messages.url == "http://anthropic.test/v1/messages"
    for openai_request in (chat, responses):
        assert openai_request.headers == {
            "Accept": "application/json",
            "Authorization": "Bearer sk-openai",
        }
    assert messages.headers == {
        "Accept": "application/json",
        "anthropic-version": "2023-06-01",
        "x-api-key": "sk-ant",
    }


def test_a_server_without_a_key_gets_none() -> None:
    keyless = models.ModelUpstream(
        {
            "openai": models.Endpoint("http://openai.test/v1", None),
            "anthropic": models.Endpoint("http://anthropic.test", None),
        },
        timeout_seconds=5,
    )
    sent = {"authorization": "Bearer token"}
    request = keyless.request(models.CHAT.parse({"messages": []}), sent)
    assert request.headers == {"Accept": "application/json"}
