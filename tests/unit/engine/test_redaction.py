"""What an agent said, made safe to keep (engine/recording/redaction.py): redacted once,
then cut."""

from __future__ import annotations

import pytest

from wopeval.engine.catalog.project_file import ProjectFile
from wopeval.engine.catalog.project_secrets import configured_secrets
from wopeval.engine.recording.redaction import (
    CUT_NOTE,
    KEPT_BYTES,
    REDACTED,
    Redactor,
    SecretSource,
    is_secret_name,
)

TOKEN = "tok_" + "A" * 39


def test_the_token_configured_secrets_bearer_values_and_provider_keys_are_cut_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REDACT_TEST_KEY", "env-secret-value")
    redactor = Redactor((SecretSource(value="literal-secret"), SecretSource(env="REDACT_TEST_KEY")))
    text = (
        f"GET http://h/host/wopeval/mcp/{TOKEN} key={TOKEN}\n"
        "using literal-secret and env-secret-value\n"
        "Authorization: Bearer abc.DEF-123_x=\n"
        "key sk-ant-api03-ABCDEFGHIJKLMNOPQRST and sk-short\n"
    )
    assert redactor.redact(text, also=[TOKEN]) == (
        f"GET http://h/host/wopeval/mcp/{REDACTED} key={REDACTED}\n"
        f"using {REDACTED} and {REDACTED}\n"
        f"Authorization: Bearer {REDACTED}\n"
        f"key {REDACTED} and sk-short\n"
    )


def test_a_secret_is_read_when_text_is_redacted_and_an_unset_one_is_skipped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    redactor = Redactor((SecretSource(env="REDACT_LATER"),))
    assert redactor.redact("later-value") == "later-value"
    monkeypatch.setenv("REDACT_LATER", "later-value")
    assert redactor.redact("later-value") == REDACTED


def test_a_secret_containing_another_is_cut_whole_and_tiny_values_are_left() -> None:
    redactor = Redactor(
        (SecretSource(value="abcd"), SecretSource(value="abcdefgh"), SecretSource(value="ab"))
    )
    assert redactor.redact("abcdefgh ab") == f"{REDACTED} ab"


def test_what_is_kept_is_the_redacted_tail_after_a_note() -> None:
    secret = "s" * 100
    redactor = Redactor((SecretSource(value=secret),))
    # The secret straddles where a cut of the raw text to 16 KiB would fall: it is replaced
    # before the cut, so no part of it is kept.
    raw = ("y" * 100 + secret + "x" * (KEPT_BYTES - 50)).encode()
    kept = redactor.kept_output(raw, len(raw))
    assert kept is not None
    assert kept.startswith(CUT_NOTE + "\n")
    body = kept.removeprefix(CUT_NOTE + "\n")
    assert len(body.encode()) == KEPT_BYTES
    assert body.startswith("y" * 40 + REDACTED + "x")
    assert "s" * 10 not in kept


def test_short_output_is_kept_whole_and_no_output_is_none() -> None:
    assert Redactor().kept_output(b"all of it\n", 10) == "all of it\n"
    assert Redactor().kept_output(b"", 0) is None
    # The lane dropped bytes before the tail it handed over: said so.
    assert Redactor().kept_output(b"tail", 9000) == f"{CUT_NOTE}\ntail"


def test_a_character_cut_in_two_is_dropped_not_garbled() -> None:
    raw = ("é" * KEPT_BYTES).encode()  # two bytes each: the cut falls inside one
    kept = Redactor().kept_output(raw, len(raw))
    assert kept is not None
    assert set(kept.removeprefix(CUT_NOTE + "\n")) == {"é"}


def test_the_projects_configured_secrets() -> None:
    project = ProjectFile.model_validate(
        {
            "agents": [
                {"id": "a", "lane": "command", "command": ["x"],
                 "env": {"LOG_LEVEL": "info", "SERP_API_KEY": "serp-value"}},
                {"id": "b", "lane": "http", "url": "http://x", "api_key_env": "B_KEY",
                 "anthropic_api_key_env": "B_ANTHROPIC_KEY", "credential": {"env": "AGENT_TOKEN"}},
                {"id": "c", "lane": "scripted"},
            ],
            "tools": [{"name": "t:x", "kind": "http", "url": "http://x",
                       "credential": {"value": "tool-literal"}}],
            "mcp_servers": [{"name": "m", "url": "http://m", "headers": {"Authorization": "h-v"},
                             "credential": {"env": "MCP_TOKEN"}}],
            "judges": [{"id": "j", "model": "m", "api": "messages", "api_key_env": "JUDGE_KEY"},
                       {"id": "k", "model": "m", "api": "responses"}],
        }
    )  # fmt: skip
    assert set(configured_secrets(project)) == {
        SecretSource(env="AGENT_TOKEN"),
        SecretSource(value="tool-literal"),
        SecretSource(env="MCP_TOKEN"),
        SecretSource(env="OPENAI_API_KEY"),
        SecretSource(env="ANTHROPIC_API_KEY"),
        SecretSource(value="serp-value"),
        SecretSource(env="B_KEY"),
        SecretSource(env="B_ANTHROPIC_KEY"),
        SecretSource(value="h-v"),
        SecretSource(env="JUDGE_KEY"),
    }
    assert "tool-literal" not in repr(configured_secrets(project))


@pytest.mark.parametrize(
    ("name", "secret"),
    [("OPENAI_API_KEY", True), ("github_token", True), ("DB_PASSWORD", True),
     ("Authorization", True), ("X-Session-Cookie", True), ("LOG_LEVEL", False),
     ("ORDERS_CALL_LOG", False)],
)  # fmt: skip
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret
