"""A host whose database another process owns fails to start with the owner named, alone.

The app's lifespan reports an expected start-up failure by its message, not a
traceback (`api/startup.py`); a refused host has touched nothing.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from starlette.types import Message

from wopeval.hosting.app import host_app
from wopeval.hosting.ownership import DatabaseOwned, claim
from wopeval.settings import Settings


async def _start_up(settings: Settings) -> list[Message]:
    """What the app sends its server when the server starts its lifespan (a failed
    start-up is raised too, after it is sent)."""
    app = host_app(settings)
    sent: list[Message] = []
    delivered = False

    async def receive() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "lifespan.startup"}
        await asyncio.Event().wait()  # the server never asks for a shutdown here
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        sent.append(message)

    with pytest.raises(DatabaseOwned):
        await app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive, send)
    return sent


def test_a_host_on_an_owned_database_reports_the_owner_without_a_traceback(
    tmp_path: Path,
) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    lease = claim(settings)
    try:
        sent = asyncio.run(_start_up(settings))
    finally:
        lease.release()
    refusal = f"is owned by another wopeval process (pid {os.getpid()}, no URL announced)"
    assert [message["type"] for message in sent] == ["lifespan.startup.failed"]
    assert sent[0]["message"].endswith(refusal), sent
    assert not (settings.data_dir / "dev-api-key").exists()
