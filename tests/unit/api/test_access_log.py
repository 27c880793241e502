"""The host's access log (api/access_log.py): a line made inside `AfterTheAnswer` is written
when the block ends, whatever ends it, through every filter (its tokens masked) and handler;
any other line at once."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterator

import pytest

from wopeval.api import access_log
from wopeval.api.access_log import HOLD_LINES, AfterTheAnswer
from wopeval.api.invocation_token import REDACT_TOKENS

TOKEN = secrets.token_urlsafe(32)


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def written() -> Iterator[list[str]]:
    """What the access logger writes, its filters installed as the host's app installs them."""
    logger = logging.getLogger(access_log.ACCESS_LOGGER)
    level = logger.level
    handler = Lines()
    access_log.install()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler.lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _line(path: str) -> None:
    # As uvicorn logs it: (client, method, path, http version, status).
    logging.getLogger(access_log.ACCESS_LOGGER).info(
        '%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "POST", path, "1.1", 200
    )


def test_a_line_made_in_the_block_is_written_when_it_ends_its_token_masked(
    written: list[str],
) -> None:
    with AfterTheAnswer():
        _line(f"/host/wopeval/openai/{TOKEN}/v1/chat/completions")
        assert written == []
    assert written == [
        '127.0.0.1:5000 - "POST /host/wopeval/openai/…/v1/chat/completions HTTP/1.1" 200'
    ]
    _line(f"/host/wopeval/mcp/{TOKEN}")
    assert written[1:] == ['127.0.0.1:5000 - "POST /host/wopeval/mcp/… HTTP/1.1" 200']


def test_a_line_held_by_a_block_that_fails_is_written_too(written: list[str]) -> None:
    def answer() -> None:
        with AfterTheAnswer():
            _line("/runs")
            raise OSError("the client went away")

    with pytest.raises(OSError, match="went away"):
        answer()
    assert written == ['127.0.0.1:5000 - "POST /runs HTTP/1.1" 200']


def test_lines_are_held_before_they_are_masked(written: list[str]) -> None:
    """The masking, too, waits for the answer: the holding filter comes first."""
    filters = logging.getLogger(access_log.ACCESS_LOGGER).filters
    assert filters.index(HOLD_LINES) < filters.index(REDACT_TOKENS)
