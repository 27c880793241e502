"""`Idempotency-Key` on mutations (idempotency.md Layer 1).

Records are keyed by (tenant, operation, key) and kept 24 h. The key is taken
in its own transaction before the work starts, so of two concurrent requests
with one key exactly one does the work; the other waits for its answer.

A request that creates a run or an annotation keeps its answer in the transaction
that inserts it (`Claim.settles_with`), so no crash can leave a run or an annotation
whose key does not name it. A key still unanswered when its host died has no run; the next host
releases it at start-up (`Host.start`), so a retry creates exactly one.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import rfc8785
from fastapi import Request, Response

from wopeval.api.deps import host_of
from wopeval.api.errors import envelope_response
from wopeval.engine.runlog.steps import now, store_unreachable
from wopeval.store import (
    IDEMPOTENCY_RETENTION,
    IdempotencyRecord,
    IdempotencyRepo,
    Store,
    UnitOfWork,
)
from wopeval.wire import errors
from wopeval.wire.principal import Principal

log = logging.getLogger("wopeval.api")

RELEASE_RETRY_FIRST_SECONDS = 0.1
RELEASE_PATIENCE_SECONDS = 5.0
"""How long a failed request tries to free its key (`_release_unanswered`), each wait
twice the last: within the 30 s a retry with the key waits for it (`_replay`)."""

_Made = TypeVar("_Made")
"""What a request's transaction makes and its answer renders (a run, an annotation)."""

_KEY = re.compile(r"^[A-Za-z0-9._~-]{22,128}$")
_WAIT_FOR_FIRST = 30.0
_REPLAY_HEADER = "OpenWOP-Idempotent-Replay"
# Never cached: validation failures, auth refusals, rate limits and server errors.
_NOT_CACHED_CODES = {"validation_error", "idempotency_key_invalid"}


class Claim:
    """The key a request holds (none without an `Idempotency-Key`) while it does its work."""

    def __init__(self, tenant: str, operation: str, key: str | None) -> None:
        self.tenant = tenant
        self.operation = operation
        self.key = key
        self.settled = False
        """The answer was kept in the work's own transaction."""

    def settles_with(
        self, render: Callable[[_Made], Response]
    ) -> Callable[[UnitOfWork, _Made], Awaitable[None]]:
        """A hook for the transaction that makes what the request creates (a run, an
        annotation): it keeps `render(made)`, the response the request will send, as this
        key's answer in that transaction, so a commit whose answer was lost leaves the key
        answered and the client's retry replays it instead of making a second one."""

        async def settle(uow: UnitOfWork, made: _Made) -> None:
            if self.key is not None:
                await _keep(uow.idempotency, self.tenant, self.operation, self.key, render(made))
                self.settled = True

        return settle


async def guard(
    request: Request,
    principal: Principal,
    operation: str,
    produce: Callable[[Claim], Awaitable[Response]],
) -> Response:
    key = request.headers.get("idempotency-key")
    if key is None:
        return await _answer(produce, Claim(principal.tenant, operation, None))
    if not _KEY.match(key):
        raise errors.IdempotencyKeyInvalid()
    digest = await _digest(request)
    store = host_of(request).store
    while True:
        async with store.transaction() as uow:
            held = await uow.idempotency.claim(principal.tenant, operation, key, digest, now())
            if held is not None and now() - held.created_at > IDEMPOTENCY_RETENTION:
                await uow.idempotency.release(principal.tenant, operation, key)
                continue
        break
    if held is not None:
        return await _replay(request, principal, operation, key, digest, held)
    claim = Claim(principal.tenant, operation, key)
    try:
        response = await _answer(produce, claim)
    except BaseException:
        # Unless the run's transaction committed its answer: that must stay.
        await _release_unanswered(store, principal.tenant, operation, key)
        raise
    if claim.settled:
        return response
    try:
        async with store.transaction() as uow:
            if _cacheable(response):
                await _keep(uow.idempotency, principal.tenant, operation, key, response)
            else:
                await uow.idempotency.release(principal.tenant, operation, key)
    except Exception as failed:
        # The work is done and its answer goes out; the key is freed rather than kept,
        # so a retry with it (its client never got this answer) does the work again.
        await _release_unanswered(store, principal.tenant, operation, key)
        if not store_unreachable(failed):
            raise
    return response


async def _release_unanswered(store: Store, tenant: str, operation: str, key: str) -> None:
    """Free a key whose request failed, so that the client's retry does the work.

    The failure is mostly the database out of reach (a restart, a failover: the request
    answers `503 service_unavailable`), so the release meets it too; it is tried again
    for a while (the client's retry meanwhile waits for it, `_replay`). A key held past
    that would answer `idempotency_in_flight` to every retry until housekeeping or the
    next start frees it."""
    delay = RELEASE_RETRY_FIRST_SECONDS
    deadline = time.monotonic() + RELEASE_PATIENCE_SECONDS
    while True:
        try:
            async with store.transaction() as uow:
                await uow.idempotency.release_unanswered(tenant, operation, key)
        except Exception as failed:
            if not store_unreachable(failed) or time.monotonic() + delay > deadline:
                log.warning("an idempotency key of %s was left in flight: %s", operation, failed)
                return
            log.warning(
                "an idempotency key of %s is not freed yet (%s); again in %.1f s",
                operation,
                type(failed).__name__,
                delay,
            )
            await asyncio.sleep(delay)
            delay = min(delay * 2, RELEASE_PATIENCE_SECONDS)
            continue
        return


async def _answer(produce: Callable[[Claim], Awaitable[Response]], claim: Claim) -> Response:
    try:
        return await produce(claim)
    except errors.WireError as error:
        return envelope_response(error)


async def _keep(
    repo: IdempotencyRepo, tenant: str, operation: str, key: str, response: Response
) -> None:
    await repo.complete(
        tenant,
        operation,
        key,
        response.status_code,
        bytes(response.body).decode("utf-8"),
        {"content-type": response.headers.get("content-type", "application/json")},
    )


def _cacheable(response: Response) -> bool:
    status = response.status_code
    if status in (401, 403, 429) or status >= 500:
        return False
    if status == 400:
        try:
            code = json.loads(bytes(response.body)).get("error")
        except ValueError:
            return False
        return code not in _NOT_CACHED_CODES
    return not _entry_to_retry(response)


def _entry_to_retry(response: Response) -> bool:
    """Whether an answer of many entries (a bulk cancel's) holds one the host could not
    answer (`service_unavailable`, the database out of reach): kept, it would answer every
    retry with that key so; released, a retry does that entry's work."""
    try:
        results = json.loads(bytes(response.body)).get("results")
    except (ValueError, AttributeError):
        return False
    unavailable = errors.ServiceUnavailable.code.value
    return isinstance(results, list) and any(
        isinstance(entry, dict) and (entry.get("error") or {}).get("error") == unavailable
        for entry in results
    )


async def _replay(
    request: Request,
    principal: Principal,
    operation: str,
    key: str,
    digest: str,
    held: IdempotencyRecord,
) -> Response:
    if held.digest != digest:
        raise errors.IdempotencyKeyMismatch()
    store = host_of(request).store
    waited = 0.0
    record: IdempotencyRecord | None = held
    while record is not None and record.in_flight and waited < _WAIT_FOR_FIRST:
        await asyncio.sleep(0.05)
        waited += 0.05
        async with store.reading() as uow:
            record = await uow.idempotency.get(principal.tenant, operation, key)
    if record is None:
        # The first request failed without a cacheable answer; this one is a fresh attempt.
        raise errors.IdempotencyInFlight("The earlier request with this key did not finish; retry.")
    if record.in_flight:
        raise errors.IdempotencyInFlight()
    headers = dict(record.headers or {})
    headers[_REPLAY_HEADER] = "true"
    return Response(
        record.body or "",
        status_code=record.status_code or 200,
        headers=headers,
    )


async def _digest(request: Request) -> str:
    raw = await request.body()
    try:
        canonical = rfc8785.dumps(json.loads(raw)) if raw else b""
    except (ValueError, rfc8785.CanonicalizationError):
        canonical = raw
    return hashlib.sha256(request.url.path.encode() + b"\n" + canonical).hexdigest()
