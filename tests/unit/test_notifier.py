"""The run-log notifier wakes readers and forgets signals nobody holds."""

from __future__ import annotations

import asyncio
import gc

from wopeval.engine.notifier import Notifier, wait_for_signal


def test_a_commit_after_subscribe_wakes_the_reader() -> None:
    async def scenario() -> bool:
        notifier = Notifier()
        signal = notifier.subscribe("t/run")
        asyncio.get_running_loop().call_later(0.01, notifier.notify, "t/run")
        return await wait_for_signal(signal, 5.0)

    assert asyncio.run(scenario())


def test_a_signal_nobody_holds_is_forgotten() -> None:
    notifier = Notifier()
    for index in range(100):
        notifier.subscribe(f"t/run-{index}")
    gc.collect()
    assert len(notifier) == 0
