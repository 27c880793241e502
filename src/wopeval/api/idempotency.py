"""`Idempotency-Key` on mutations (idempotency.md Layer 1).

Records are keyed by (tenant, operation, key) and kept 24 h. The key is taken
in its own transaction before the work starts, so of two concurrent requests
with one key exactly one does the work; the other waits for its answer.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Awaitable, Callable

import rfc8785
from fastapi import Request, Response

from wopeval.api.deps import get_host
from wopeval.api.errors import envelope_response
from wopeval.engine.runlog import now
from wopeval.store import IDEMPOTENCY_RETENTION, IdempotencyRecord
from wopeval.wire import errors
from wopeval.wire.principal import Principal

_KEY = re.compile(r"^[A-Za-z0-9._~-]{22,128}$")
_WAIT_FOR_FIRST = 30.0
_REPLAY_HEADER = "OpenWOP-Idempotent-Replay"
# Never cached: validation failures, auth refusals, rate limits and server errors.
_NOT_CACHED_CODES = {"validation_error", "idempotency_key_invalid"}


async def guard(
    request: Request,
    principal: Principal,
    operation: str,
    produce: Callable[[], Awaitable[Response]],
) -> Response:
    key = request.headers.get("idempotency-key")
    if key is None:
        return await _answer(produce)
    if not _KEY.match(key):
        raise errors.IdempotencyKeyInvalid()
    digest = await _digest(request)
    store = get_host(request).store
    while True:
        async with store.transaction() as uow:
            held = await uow.idempotency.claim(principal.tenant, operation, key, digest, now())
            if held is not None and now() - held.created_at > IDEMPOTENCY_RETENTION:
                await uow.idempotency.release(principal.tenant, operation, key)
                continue
        break
    if held is not None:
        return await _replay(request, principal, operation, key, digest, held)
    try:
        response = await _answer(produce)
    except BaseException:
        async with store.transaction() as uow:
            await uow.idempotency.release(principal.tenant, operation, key)
        raise
    async with store.transaction() as uow:
        if _cacheable(response):
            await uow.idempotency.complete(
                principal.tenant,
                operation,
                key,
                response.status_code,
                bytes(response.body).decode("utf-8"),
                {"content-type": response.headers.get("content-type", "application/json")},
            )
        else:
            await uow.idempotency.release(principal.tenant, operation, key)
    return response


async def _answer(produce: Callable[[], Awaitable[Response]]) -> Response:
    try:
        return await produce()
    except errors.WireError as error:
        return envelope_response(error)


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
    return True


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
    store = get_host(request).store
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
