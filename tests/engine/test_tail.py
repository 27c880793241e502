"""Shared tails: one read of the log per commit for all of a run's followers, a follower
that starts behind still gets every event, from the store, what a follower is handed at once
is bounded, and a follower that falls out of the window is cut, for its client to resume."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import ExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from _backends import Backend
from _hosts import TENANT, running_host
from wopeval.api.ui import live
from wopeval.engine.live.tail import CROWD, Follower, LeftBehind, TailBroken, Tails
from wopeval.hosting.host import Host
from wopeval.store import OwnedRun
from wopeval.wire.principal import Principal
from wopeval.wire.runs import CreateRunRequest

NODES = 30
# run.started, node.started + node.completed per node (one commit each), run.completed.
EVENTS = 2 + 2 * NODES
COMMITS = 1 + NODES + 1
PRINCIPAL = Principal(TENANT, "key-test")


@asynccontextmanager
async def chain_host(backend: Backend, tmp_path: Path) -> AsyncIterator[Host]:
    """A host whose `chain` workflow runs NODES noop nodes, one commit each."""
    project = tmp_path / "project"
    (project / "workflows").mkdir(parents=True)
    (project / "wopeval.toml").write_text('workflows = ["workflows/*.json"]\n')
    nodes = [{"id": f"n{i}", "type": "core.noop"} for i in range(NODES)]
    (project / "workflows" / "chain.json").write_text(json.dumps({"id": "chain", "nodes": nodes}))
    async with running_host(backend, tmp_path / "data", project=project) as host:
        yield host


async def start_chain(host: Host) -> OwnedRun:
    """A new chain run, as a follower's request reads it (through its tenant)."""
    created = await host.engine.create_workflow_run(PRINCIPAL, CreateRunRequest(workflowId="chain"))
    return await host.engine.get_run(PRINCIPAL, created.run_id)


async def read_to_end(follower: Follower) -> list[int]:
    loop = asyncio.get_running_loop()
    sequences: list[int] = []
    while not follower.ended:
        sequences += [e.sequence for e in await follower.next(until=loop.time() + 30)]
    return sequences


def test_followers_of_one_run_share_one_read_per_commit(backend: Backend, tmp_path: Path) -> None:
    followers = 20

    async def scenario() -> None:
        async with chain_host(backend, tmp_path) as host:
            reads: list[str] = []

            def count(*args: Any) -> None:
                if "FROM events" in args[2]:
                    reads.append(args[2])

            event.listen(host.store.engine.sync_engine, "before_cursor_execute", count)
            tails = Tails(host.store, host.engine.notifier)
            record = await start_chain(host)
            with ExitStack() as stack:
                joined = [stack.enter_context(tails.follow(record, -1)) for _ in range(followers)]
                assert len(tails) == 1
                logs = await asyncio.gather(*(read_to_end(one) for one in joined))
            assert logs == [list(range(EVENTS))] * followers
            assert len(tails) == 0
            # Each follower reads what was logged before it joined (one page) from the store;
            # everything after is read once per commit (twice when a commit lands mid-read).
            assert len(reads) <= followers + 2 * COMMITS

    asyncio.run(scenario())


def test_a_follower_left_behind_by_the_window_gets_every_event_from_the_store(
    backend: Backend, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with chain_host(backend, tmp_path) as host:
            tails = Tails(host.store, host.engine.notifier, window=4)
            record = await start_chain(host)
            with tails.follow(record, 0) as slow:
                # `slow` reads nothing until the tail has read the whole run (a follower reading
                # alongside could itself fall out of a window this small, as the load decides).
                tail = slow._tail
                while not tail.finished:
                    await tail.changed.wait()
                assert await read_to_end(slow) == list(range(1, EVENTS))

    asyncio.run(scenario())


def test_a_resumed_follower_past_the_end_ends_with_the_run(
    backend: Backend, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with chain_host(backend, tmp_path) as host:
            tails = Tails(host.store, host.engine.notifier)
            record = await start_chain(host)
            with tails.follow(record, 10_000) as ahead:
                assert await read_to_end(ahead) == []
                assert ahead.ended
            assert (await host.engine.get_run(PRINCIPAL, record.run_id)).status.is_terminal

    asyncio.run(scenario())


def test_closing_the_tails_ends_every_follower_with_an_error(
    backend: Backend, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with chain_host(backend, tmp_path) as host:
            tails = Tails(host.store, host.engine.notifier)
            with tails.follow(await start_chain(host), -1) as follower:
                await tails.close()
                with pytest.raises(TailBroken):
                    await read_to_end(follower)

    asyncio.run(scenario())


def test_a_delivery_holds_at_most_its_bound_of_documents_unless_one_event_is_larger(
    backend: Backend, tmp_path: Path
) -> None:
    bound = 300  # characters: a few of the chain's documents, fewer than one page

    async def scenario() -> None:
        async with chain_host(backend, tmp_path) as host:
            tails = Tails(host.store, host.engine.notifier, delivery_chars=bound)
            record = await start_chain(host)
            loop = asyncio.get_running_loop()
            # A follower from the start reads the store, one from where the run is the window.
            with tails.follow(record, -1) as behind, tails.follow(record, 0) as live:
                for follower in (live, behind):
                    received: list[int] = []
                    while not follower.ended:
                        delivery = await follower.next(until=loop.time() + 30)
                        size = sum(len(e.doc) for e in delivery)
                        assert size <= bound or len(delivery) == 1
                        received += [e.sequence for e in delivery]
                    assert received == list(range(received[0], EVENTS))
                    assert received[0] in (0, 1)

    asyncio.run(scenario())


async def resume_to_end(host: Host, tails: Tails, run_id: str, cursor: int) -> list[int]:
    """What a client that resumes from `cursor` receives to the run's end, resuming again
    from its cursor whenever it is cut: on a busy machine the run's shared tail may still be
    reading the ended run's last events into its window as the client catches up, and cut
    it once more (a client's reconnect, not a loss: nothing is skipped or repeated)."""
    loop = asyncio.get_running_loop()
    received: list[int] = []
    while True:
        record = await host.engine.get_run(PRINCIPAL, run_id)
        with tails.follow(record, cursor) as resumed:
            try:
                while not resumed.ended:
                    received += [e.sequence for e in await resumed.next(loop.time() + 30)]
                return received
            except LeftBehind:
                cursor = resumed.cursor


async def read_then_stall(slow: Follower, host: Host, received: list[int]) -> None:
    """`slow` reads once (within the window: it follows from where the run is), then nothing
    until the run has ended, then asks again."""
    loop = asyncio.get_running_loop()
    received += [e.sequence for e in await slow.next(until=loop.time() + 30)]
    # Not a second follower to wait with: on a busy machine it could fall out of the
    # window too, and its cut be taken for the slow one's.
    await host.engine.wait_idle()
    received += [e.sequence for e in await slow.next(until=loop.time() + 30)]


def test_a_follower_that_fell_out_of_the_window_is_cut_and_resumes_from_its_cursor(
    backend: Backend, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with chain_host(backend, tmp_path) as host:
            tails = Tails(host.store, host.engine.notifier, window=4)
            record = await start_chain(host)
            after = record.last_sequence
            received: list[int] = []
            with tails.follow(record, after) as slow:
                with pytest.raises(LeftBehind):
                    await read_then_stall(slow, host, received)
                assert not slow.ended
            # The client resumes from the last event it received: a new request, which reads
            # the run afresh (the route's `get_run`), and the rest of the log from the store.
            received += await resume_to_end(host, tails, record.run_id, slow.cursor)
            assert received == list(range(after + 1, EVENTS))

    asyncio.run(scenario())


def test_a_live_page_that_fell_out_of_the_window_ends_its_stream_for_the_browser_to_reconnect(
    backend: Backend, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with chain_host(backend, tmp_path) as host:
            host.tails = Tails(host.store, host.engine.notifier, window=4)
            record = await start_chain(host)
            changes = live.changes(host, [(record, record.last_sequence)])
            # The page is told of a change (or is cut already, if the run outran it at once),
            # then reads no more until the run has ended.
            sent = [await anext(changes, "")]
            await host.engine.wait_idle()
            sent += [chunk async for chunk in changes]
            assert live.ENDED not in sent  # cut: not told that every run it follows has ended

    asyncio.run(scenario())


def test_a_crowd_leaving_a_run_hands_freed_memory_back_and_a_lone_follower_does_not(
    backend: Backend, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with chain_host(backend, tmp_path) as host:
            tails = Tails(host.store, host.engine.notifier, trim_delay=0.05)
            record = await start_chain(host)
            with tails.follow(record, -1) as alone:
                assert await read_to_end(alone) == list(range(EVENTS))
            await asyncio.sleep(0.1)
            assert tails.memory_returns == 0
            with ExitStack() as stack:
                crowd = [stack.enter_context(tails.follow(record, -1)) for _ in range(CROWD)]
                logs = await asyncio.gather(*(read_to_end(one) for one in crowd))
            assert logs == [list(range(EVENTS))] * CROWD
            assert tails.memory_returns == 0  # not yet: what leaving frees comes after
            await asyncio.sleep(0.1)
            assert tails.memory_returns == 1  # glibc: this machine's and CI's C library

    asyncio.run(scenario())
