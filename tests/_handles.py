"""A test's handle on a run it made: the store's content reads take one (store/_runs.py)."""

from __future__ import annotations

from wopeval.store import RunHandle, UnitOfWork


async def handle_of(uow: UnitOfWork, run_id: str) -> RunHandle:
    """The run's handle, read in host scope: a test reads back whatever run it made."""
    run = await uow.runs.for_host(run_id)
    assert run is not None, f"no run {run_id}"
    return run.handle
