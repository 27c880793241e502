"""A host started in-process on the test's backend, stopped however the test ends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from _backends import Backend
from wopeval.hosting.host import Host
from wopeval.settings import Settings

TENANT = "acme"


@asynccontextmanager
async def running_host(backend: Backend, data_dir: Path, **settings: Any) -> AsyncIterator[Host]:
    host = await Host.start(
        Settings(
            data_dir=data_dir,
            database_url=backend.new_database(),
            api_keys={TENANT: "k" * 32},
            **settings,
        )
    )
    try:
        yield host
    finally:
        await host.stop()
