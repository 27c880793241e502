"""An invocation's capability token never reaches the access log; other lines pass as they are."""

from __future__ import annotations

import logging

from wopeval.api.routes.mcp import REDACT_TOKENS


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


def test_other_paths_are_logged_untouched() -> None:
    record = _access_line("/runs/acme~2Fr1")
    args = record.args
    assert REDACT_TOKENS.filter(record)
    assert record.args is args
