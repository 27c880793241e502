"""The LLM lanes' retries: what an SDK's exception means, and how long to wait before again.

Both official SDKs raise the same three kinds of error (an HTTP status, a
timeout, a connection failure); each lane says what its SDK's exception is
(`Refusal`), and this loop decides: a 429, a 5xx, a timeout or a connection
error is tried again, up to `retries` times, after the server's `Retry-After`
(at most 30 s) when it gives one, else 0.5 s doubling to 8 s. The SDKs do no
retries of their own: every attempt is counted and recorded with the exchange.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from pydantic import JsonValue

from wopeval.models import LiveAnswer, ModelAnswer, ModelCallFailed

MAX_RETRY_AFTER_SECONDS = 30.0


@dataclass(frozen=True)
class Refusal:
    """An SDK's exception, read: why, what is recorded, whether to try again."""

    reason: str
    """`answered HTTP 429`, `did not answer in time`, `could not be reached`."""
    error: dict[str, JsonValue]
    retryable: bool
    retry_after: str | None = None

    def failure(self, url: str, attempts: int = 1) -> ModelCallFailed:
        """What is recorded of a request to the model API at `url` (as `shown_url` shows it)
        that ended so after `attempts`: the reason with the URL and cause, the error with
        the URL."""
        after = "" if attempts == 1 else f" (after {attempts} attempts)"
        cause = self.error.get("cause")
        why = f": {cause}" if isinstance(cause, str) else ""
        return ModelCallFailed(
            f"the model API at {url} {self.reason}{why}{after}",
            {**self.error, "url": url},
            attempts,
        )


def status_refusal(status: int, error: dict[str, JsonValue], retry_after: str | None) -> Refusal:
    retryable = status == 429 or status >= 500
    return Refusal(f"answered HTTP {status}", {"status": status, **error}, retryable, retry_after)


def transport_refusal(exc: BaseException, timed_out: bool) -> Refusal:
    """A request that got no answer; `cause` says why in words a reader can act on
    (refused, a name that does not resolve, no answer in time)."""
    if timed_out:
        return Refusal("did not answer in time", {"code": "timeout"}, retryable=True)
    cause = transport_cause(exc)
    return Refusal("could not be reached", {"code": "unreachable", "cause": cause}, True)


def transport_cause(exc: BaseException) -> str:
    """Why a connection failed, from the OS error an SDK's or HTTPX's exception wraps."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError):
            return "connection refused"
        if isinstance(seen, socket.gaierror):
            return "name not resolved"
        seen = seen.__cause__ or seen.__context__
    return "no connection"


def shown_url(url: str) -> str:
    """`url` as an error may show it: scheme, host, port and path (no user, password, query)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port is not None else ""
    return f"{parts.scheme}://{host}{port}{parts.path}".rstrip("/")


async def retried(
    send: Callable[[], Awaitable[ModelAnswer]],
    refused: Callable[[Exception], Refusal | None],
    retries: int,
    base_url: str,
) -> LiveAnswer:
    """`send()` until it answers, or ModelCallFailed once it may not be tried again.

    `refused` reads the SDK's exceptions; any other exception (a ModelCallFailed for a
    malformed answer) goes through unchanged. The failure names `base_url` (as `shown_url`
    shows it), so a reader knows which server did not answer.
    """
    attempts = 0
    while True:
        attempts += 1
        try:
            return LiveAnswer(await send(), attempts)
        except Exception as exc:
            refusal = refused(exc)
            if refusal is None:
                raise
            if not refusal.retryable or attempts > retries:
                raise refusal.failure(shown_url(base_url), attempts) from None
        await asyncio.sleep(delay(refusal.retry_after, attempts))


def delay(retry_after: str | None, attempts: int) -> float:
    """The server's `Retry-After` (seconds, at most 30), else 0.5 s doubling to 8 s."""
    if retry_after is not None:
        try:
            return min(max(float(retry_after), 0.0), MAX_RETRY_AFTER_SECONDS)
        except ValueError:
            pass
    return float(min(0.5 * 2 ** (attempts - 1), 8.0))
