"""The host's access log: every token masked, and a proxied answer's line written once the
answer has gone out.

uvicorn writes a request's line as its response starts, before the status line goes to the
client. For a whole model exchange through the proxy that put the line's filters, its
formatting and the handler's write (~6 % of the host's CPU on the exchange, ~60 µs; issue
29) between the exchange's record and its answer's first byte. Inside `AfterTheAnswer`,
uvicorn still makes the line's record where it did, but `HOLD_LINES`, the access logger's
first filter, keeps it; once the block ends (the answer written, or its writing failed) the
record goes through the logger's filters and handlers as it would have: the same line,
its tokens masked (invocation_token.REDACT_TOKENS), a few hundred microseconds later.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar, Token
from types import TracebackType

from wopeval.api.invocation_token import REDACT_TOKENS

ACCESS_LOGGER = "uvicorn.access"
_HELD: ContextVar[list[logging.LogRecord] | None] = ContextVar("held_access_lines", default=None)
"""The records held for the request the current task answers, inside `AfterTheAnswer`."""


class HoldLines(logging.Filter):
    """Holds the access log's records made inside an `AfterTheAnswer` block; lets any other
    through."""

    def filter(self, record: logging.LogRecord) -> bool:
        held = _HELD.get()
        if held is None:
            return True
        held.append(record)
        return False


HOLD_LINES = HoldLines()


def install() -> None:
    """The access logger's filters: lines held first (so that the masking, too, runs after
    the answer), every token masked."""
    logger = logging.getLogger(ACCESS_LOGGER)
    logger.addFilter(HOLD_LINES)
    logger.addFilter(REDACT_TOKENS)


class AfterTheAnswer:
    """`with AfterTheAnswer(): await response(scope, receive, send)`: the access log's lines
    made in the block are written when it ends, through every filter and handler."""

    __slots__ = ("_held", "_token")

    def __enter__(self) -> None:
        self._held: list[logging.LogRecord] = []
        self._token: Token[list[logging.LogRecord] | None] = _HELD.set(self._held)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        _HELD.reset(self._token)
        for record in self._held:
            logging.getLogger(record.name).handle(record)
