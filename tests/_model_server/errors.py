"""Refusals and the two providers' error shapes.

OpenAI (Chat Completions and Responses): `{"error": {"message", "type", "param",
"code"}}`. Anthropic: `{"type": "error", "error": {"type", "message"},
"request_id"}`, its `type` naming the class of error by status.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .script import Failure, Unplayable

INVALID_REQUEST = "invalid_request_error"


@dataclass(frozen=True)
class Refusal:
    """An error answer, before a provider renders it."""

    status: int
    message: str
    param: str | None = None
    code: str | None = None
    retry_after: str | None = None

    @property
    def headers(self) -> dict[str, str]:
        return {} if self.retry_after is None else {"Retry-After": self.retry_after}


def invalid(message: str, param: str | None = None, code: str | None = None) -> Refusal:
    return Refusal(400, message, param, code)


def from_script(outcome: Failure | Unplayable) -> Refusal:
    if isinstance(outcome, Unplayable):
        return invalid(outcome.message, code=outcome.code)
    return Refusal(outcome.status, f"scripted {outcome.status}", retry_after=outcome.retry_after)


def openai_body(refusal: Refusal) -> dict[str, Any]:
    if refusal.status == 429:
        kind = "rate_limit_exceeded"
    elif refusal.status >= 500:
        kind = "server_error"
    else:
        kind = INVALID_REQUEST
    # OpenAI names a rate limit or a server error in `code` too; a refusal names its own.
    code = kind if refusal.code is None and kind != INVALID_REQUEST else refusal.code
    error = {"message": refusal.message, "type": kind, "param": refusal.param, "code": code}
    return {"error": error}


_ANTHROPIC_KINDS = {
    400: INVALID_REQUEST,
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def anthropic_body(refusal: Refusal) -> dict[str, Any]:
    kind = _ANTHROPIC_KINDS.get(refusal.status)
    if kind is None:
        kind = INVALID_REQUEST if refusal.status < 500 else "api_error"
    # Anthropic's errors carry no code: a script's reason (`unscripted`, ...) goes in the text.
    message = refusal.message if refusal.code is None else f"{refusal.message} ({refusal.code})"
    error = {"type": kind, "message": message}
    return {"type": "error", "error": error, "request_id": "req_scripted"}
