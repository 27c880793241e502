"""The run-log notifier wakes readers, forgets signals nobody holds and drops kept answers."""

from __future__ import annotations

import asyncio
import gc

from wopeval.engine.notifier import Notifier, wait_for_signal
from wopeval.engine.read_cache import ReadCache


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


def test_a_change_drops_the_answer_kept_of_its_run_and_only_that_one() -> None:
    cache = ReadCache()
    notifier = Notifier(cache)
    for run_id in ("t/one", "t/two"):
        cache.keep("t", run_id, run_id.encode(), cache.epoch)
    notifier.notify("t/one")
    assert cache.get("t", "t/one") is None
    assert cache.get("t", "t/two") == b"t/two"
    notifier.notify_all()  # a gap in what this process was told: nothing kept is trusted
    assert cache.get("t", "t/two") is None


def test_an_answer_read_across_a_change_is_not_kept() -> None:
    cache = ReadCache()
    read_at = cache.epoch
    cache.forget("t/one")  # the run changed while its read was under way
    cache.keep("t", "t/one", b"old", read_at)
    assert cache.get("t", "t/one") is None
    cache.keep("t", "t/one", b"new", cache.epoch)
    assert cache.get("t", "t/one") == b"new"


def test_a_kept_answer_is_only_its_tenants_and_the_least_read_goes_first() -> None:
    cache = ReadCache(capacity=2)
    for run_id in ("t/one", "t/two"):
        cache.keep("t", run_id, run_id.encode(), cache.epoch)
    assert cache.get("u", "t/one") is None
    assert cache.get("t", "t/one") == b"t/one"  # now the most recently read
    cache.keep("t", "t/three", b"t/three", cache.epoch)
    assert cache.get("t", "t/two") is None
    assert cache.get("t", "t/one") == b"t/one"
