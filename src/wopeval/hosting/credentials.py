"""Which API keys a host accepts, and the cases in which it writes them.

Only a serving host changes the stored keys, and only at start-up: configured
keys (`--api-key`, `WOPEVAL_API_KEYS`) replace the stored set; with none, it
serves the `dev` tenant's stored key, generated on the first start only.
A CLI command's own in-process host reads the stored keys and writes none:
configured keys and its own session key for `dev` are held in memory. The one
exception is `wopeval demo`'s host, which makes the `dev` key when there is none
(as a first `serve` would), so the key its docs name is there after the demo.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
from pathlib import Path

from wopeval.api.auth import Authenticator, hash_key, key_id
from wopeval.engine.runlog.steps import now
from wopeval.hosting.discovery import DEV_KEY_FILE, DEV_TENANT
from wopeval.settings import Settings
from wopeval.store import Store, UnitOfWork, replace_keys

Entry = tuple[str, str, str]
"""(key hash, key id, tenant), as the store keeps a key."""


async def serving_keys(settings: Settings, store: Store) -> Authenticator:
    async with store.transaction() as uow:
        await uow.serialise_startup()
        if settings.api_keys:
            entries = _configured(settings)
            await replace_keys(uow.keys, entries, now())
            return Authenticator(entries)
        entries = await _dev_keys(settings, uow)
    return Authenticator(entries)


async def _dev_keys(settings: Settings, uow: UnitOfWork) -> list[Entry]:
    """The `dev` tenant's stored keys; none stored, a new one, written to DATA_DIR."""
    entries = [e for e in await uow.keys.all() if e[2] == DEV_TENANT]
    if not entries:
        entries = [_entry(_new_dev_key(settings.data_dir), DEV_TENANT)]
        await uow.keys.ensure(*entries[0], now())
    return entries


async def embedded_keys(
    settings: Settings, store: Store, session_key: str, *, leave_dev_key: bool = False
) -> Authenticator:
    if leave_dev_key and not settings.api_keys:
        async with store.transaction() as uow:
            await uow.serialise_startup()
            await _dev_keys(settings, uow)
    async with store.reading() as uow:
        stored = await uow.keys.all()
    # Later entries win a tie: what this command was configured with beats the store.
    return Authenticator([*stored, *_configured(settings), _entry(session_key, DEV_TENANT)])


async def stored_keys(store: Store) -> Authenticator:
    """The keys the serving processes stored (a queue worker checks a key an agent's
    request carries against them)."""
    async with store.reading() as uow:
        return Authenticator(await uow.keys.all())


def _configured(settings: Settings) -> list[Entry]:
    return [_entry(key, tenant) for tenant, key in settings.api_keys.items()]


def _entry(key: str, tenant: str) -> Entry:
    return (hash_key(key), key_id(key), tenant)


def _new_dev_key(data_dir: Path) -> str:
    """Generate the `dev` tenant's key, print it once, and leave it in a 0600 file."""
    key = "wop_" + secrets.token_urlsafe(32)
    path = data_dir / DEV_KEY_FILE
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(key + "\n")
    print(
        f"wopeval: generated the API key of tenant 'dev' (saved to {path}):\n  {key}",
        file=sys.stderr,
    )
    return key
