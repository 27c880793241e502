"""What `/host/wopeval/health` reports of a process, whichever its role.

Liveness is the process answering at all. Readiness is its database reachable
and, in queue mode, the queue's tables there and (API processes) the listener
that wakes its readers in place. A process that is not ready still answers,
with everything it checked, so an operator sees why.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from pydantic import JsonValue
from sqlalchemy import text

from wopeval.store import Store


@dataclass(frozen=True)
class HealthReport:
    document: dict[str, JsonValue]
    ready: bool


HealthSource = Callable[[], Awaitable[HealthReport]]
"""How a process produces its report (set on the app as `state.health`)."""


async def database_check(store: Store) -> dict[str, JsonValue]:
    """`{"ok": true}` when a query reaches the database, else the failure."""
    try:
        async with store.reading() as uow:
            await uow.connection.execute(text("SELECT 1"))
    except Exception as exc:  # any failure to reach it is what this check reports
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}".strip()}
    return {"ok": True}


def all_ok(*checks: dict[str, JsonValue]) -> bool:
    return all(check.get("ok") is True for check in checks)
