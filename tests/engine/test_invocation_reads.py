"""The invocations' reads on both databases: the listing without what agents said, what one
said, its erasure, and the idle nodes a resumed queue job carries to the run's row."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _backends import Backend
from _handles import handle_of
from unit.engine._store import new_record
from wopeval.store import InvocationRow, Store, sqlite_url
from wopeval.wire.runs import IdleAgent

AT = datetime(2026, 12, 2, 1, 2, 3, tzinfo=UTC)
RUN = "acme/" + "a" * 32


def _row(invocation_id: str, node_id: str, offset: int, **fields: Any) -> tuple[Any, ...]:
    base = {
        "invocation_id": invocation_id,
        "agent_id": "agent",
        "is_delegate": False,
        "node_id": node_id,
        "task_id": None,
        "trial": None,
        "outcome": "completed",
        "error": None,
        "started_at": AT + timedelta(seconds=offset),
        "completed_at": AT + timedelta(seconds=offset + 1),
    }
    return InvocationRow(**{**base, **fields}).to_row(RUN)


def test_invocations_read_as_listed_said_erased_and_resumed(
    backend: Backend, tmp_path: Path
) -> None:
    async def scenario() -> None:
        store = await Store.open(backend.new_database() or sqlite_url(tmp_path))
        try:
            async with store.transaction() as uow:
                await uow.runs.insert(replace(new_record("acme"), run_id=RUN))
                await uow.invocations.append(
                    [
                        _row("i-1", "first", 0, stderr="said one", idle=["no_tool_calls"]),
                        _row("i-2", "second", 2),
                        _row("i-3", "second", 3, is_delegate=True, idle=["no_tool_calls"]),
                        _row("i-4", "third", 4, idle=["no_model_calls"]),
                    ]
                )
            async with store.reading() as uow:
                run = await handle_of(uow, RUN)
                listed = await uow.invocations.listing(run)
                said = await uow.invocations.said(run, ["i-1", "i-2", "nope"])
                # A resumed job: nodes `first` and `second` completed before; a delegate's
                # idle invocation and a node not yet done are not the run's idle nodes.
                resumed = await uow.invocations.idle_nodes(run, ["first", "second"])
            assert [(i.invocation_id, i.said_something, i.idle) for i in listed] == [
                ("i-1", True, ["no_tool_calls"]),
                ("i-2", False, None),
                ("i-3", False, ["no_tool_calls"]),
                ("i-4", False, ["no_model_calls"]),
            ]
            assert listed[0].started_at == AT
            assert {key: value.stderr for key, value in said.items()} == {
                "i-1": "said one",
                "i-2": None,
            }
            assert resumed == [
                IdleAgent(agentId="agent", nodeId="first", reasons=["no_tool_calls"])
            ]
            async with store.transaction() as uow:
                await uow.invocations.erase_said(RUN)
            async with store.reading() as uow:
                said_after = await uow.invocations.said(await handle_of(uow, RUN), ["i-1"])
                assert said_after["i-1"].stderr is None
        finally:
            await store.close()

    asyncio.run(scenario())
