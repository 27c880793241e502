"""An invocation's capability token never reaches the access log; other lines pass as they are."""

from __future__ import annotations

import logging
import secrets

import pytest

from wopeval.api.invocation_token import REDACT_TOKENS


def _access_line(path: str) -> logging.LogRecord:
    # uvicorn's access record: (client, method, path, http version, status).
    return logging.LogRecord(
        "uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5000", "POST", path, "1.1", 200), None,
    )  # fmt: skip


def test_the_mcp_and_model_proxy_tokens_are_cut_from_the_path() -> None:
    for path, logged in [
        ("/host/wopeval/mcp/SECRET-token", "/host/wopeval/mcp/…"),
        ("/host/wopeval/openai/SECRET-token/v1/chat/completions",
         "/host/wopeval/openai/…/v1/chat/completions"),
        ("/host/wopeval/openai/SECRET-token/v1/responses", "/host/wopeval/openai/…/v1/responses"),
        ("/host/wopeval/anthropic/SECRET-token/v1/messages",
         "/host/wopeval/anthropic/…/v1/messages"),
    ]:  # fmt: skip
        record = _access_line(path)
        assert REDACT_TOKENS.filter(record)
        assert "SECRET" not in record.getMessage()
        assert logged in record.getMessage()


TOKEN = secrets.token_urlsafe(32)


@pytest.mark.parametrize(
    "path",
    [
        f"/host/wopeval/openai//{TOKEN}/v1/chat/completions",
        f"/host//wopeval/mcp/{TOKEN}",
        f"/HOST/WopEval/MCP/{TOKEN}",
        f"/host/wopeval/mcp/%22{TOKEN}",
        f"/host/wopeval/anthropic/{TOKEN}x/v1/messages",
        f"/v1/chat/completions?key={TOKEN}",
        f"/{TOKEN}/v1/responses",
        f"/host/wopeval/openai/{TOKEN[:20]}",
    ],
    ids=["double-slash", "slashes-before", "case", "quoted", "glued", "query", "bare", "cut"],
)
def test_a_token_in_a_malformed_request_target_is_cut_too(path: str) -> None:
    record = _access_line(path)
    assert REDACT_TOKENS.filter(record)
    assert TOKEN[:20] not in record.getMessage()
    assert "…" in record.getMessage()


def test_a_bare_token_is_replaced_by_an_ellipsis() -> None:
    record = _access_line(f"/{TOKEN}/v1/responses?x=1")
    REDACT_TOKENS.filter(record)
    assert record.getMessage() == '127.0.0.1:5000 - "POST /…/v1/responses?x=1 HTTP/1.1" 200'


def test_other_paths_are_logged_untouched() -> None:
    record = _access_line("/runs/acme~2Fr1")
    args = record.args
    assert REDACT_TOKENS.filter(record)
    assert record.args is args


def test_the_shortest_text_that_holds_a_token_is_cut() -> None:
    for path, logged in [
        ("/host/wopeval/mcp/x", "/host/wopeval/mcp/…"),
        ("/host/wopeval/openai/x", "/host/wopeval/openai/…"),
        ("x" * 43, "…"),
    ]:
        record = _access_line(path)
        REDACT_TOKENS.filter(record)
        assert record.getMessage() == f'127.0.0.1:5000 - "POST {logged} HTTP/1.1" 200'
