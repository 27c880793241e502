"""A host's housekeeping: idempotency keys left in flight, and records past their time."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from wopeval.engine.live.notifier import Notifier
from wopeval.engine.runlog.steps import now
from wopeval.engine.runs.erasure import purge_expired
from wopeval.store import IDEMPOTENCY_RETENTION, Store

log = logging.getLogger("wopeval.host")
STALE_CLAIM = timedelta(minutes=10)
"""Queue mode: an idempotency key unanswered this long belongs to a request that died
with its process (no request takes so long), and is released by housekeeping."""


async def release_unanswered_keys(store: Store) -> None:
    """Free the idempotency keys a stopped host left in flight: none of them has a run."""
    async with store.transaction() as uow:
        released = await uow.idempotency.release_all_unanswered()
    if released:
        log.info("released %d idempotency keys left in flight by a stopped host", released)


async def housekeep(
    store: Store,
    notifier: Notifier,
    retention_days: int | None,
    interval: float,
    *,
    stale_claims: bool,
) -> None:
    """On a schedule: drop idempotency records past their 24 h and, with a retention
    period set, erase expired recorded tool content. In queue mode (`stale_claims`),
    also release keys whose request died with its process (`STALE_CLAIM`)."""
    while True:
        try:
            async with store.transaction() as uow:
                await uow.idempotency.purge_before(now() - IDEMPOTENCY_RETENTION)
                if stale_claims:
                    await uow.idempotency.release_unanswered_before(now() - STALE_CLAIM)
            if retention_days is not None:
                purged = await purge_expired(store, retention_days)
                if purged.erased.runs:
                    notifier.rewritten()
                    log.info("retention erased the tool content of %d runs", purged.erased.runs)
                if purged.deferred:
                    log.info(
                        "retention deferred %d runs: a run that copied them has not ended",
                        purged.deferred,
                    )
        except Exception:
            log.exception("housekeeping failed; retrying at the next interval")
        await asyncio.sleep(interval)
