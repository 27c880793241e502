"""The run-log notifier wakes readers, forgets signals nobody holds and drops kept answers."""

from __future__ import annotations

import asyncio
import gc

from wopeval.engine.live.notifier import Notifier, wait_for_signal
from wopeval.engine.live.read_cache import ReadCache, tenant_scope


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
        cache.keep("t", run_id, "snapshot", run_id.encode(), cache.epoch)
    notifier.notify("t/one")
    assert cache.get("t", "t/one", "snapshot") is None
    assert cache.get("t", "t/two", "snapshot") == b"t/two"
    notifier.notify_all()  # a gap in what this process was told: nothing kept is trusted
    assert cache.get("t", "t/two", "snapshot") is None


def test_an_answer_read_across_a_change_is_not_kept() -> None:
    cache = ReadCache()
    read_at = cache.epoch
    cache.forget("t/one")  # the run changed while its read was under way
    cache.keep("t", "t/one", "snapshot", b"old", read_at)
    assert cache.get("t", "t/one", "snapshot") is None
    cache.keep("t", "t/one", "snapshot", b"new", cache.epoch)
    assert cache.get("t", "t/one", "snapshot") == b"new"


def test_a_kept_answer_is_only_its_tenants_and_the_least_read_goes_first() -> None:
    cache = ReadCache(budget_bytes=10)
    for run_id in ("t/one", "t/two"):
        cache.keep("t", run_id, "snapshot", run_id.encode(), cache.epoch)  # 5 bytes each
    assert cache.get("u", "t/one", "snapshot") is None
    assert cache.get("t", "t/one", "snapshot") == b"t/one"  # now the most recently read
    cache.keep("t", "t/three", "snapshot", b"t/th", cache.epoch)
    assert cache.get("t", "t/two", "snapshot") is None
    assert cache.get("t", "t/one", "snapshot") == b"t/one"
    cache.keep("t", "t/one", "poll?a", b"a" * 11, cache.epoch)  # beyond the whole budget
    assert cache.get("t", "t/one", "poll?a") is None


def test_a_change_drops_every_view_of_its_run() -> None:
    cache = ReadCache()
    for view in ("snapshot", "poll?afterSequence=3", "poll?afterSequence=9"):
        cache.keep("t", "t/one", view, view.encode(), cache.epoch)
    cache.keep("t", "t/two", "poll?afterSequence=3", b"two", cache.epoch)
    cache.forget("t/one")
    assert [cache.get("t", "t/one", view) for view in ("snapshot", "poll?afterSequence=3")] == [
        None,
        None,
    ]
    assert cache.get("t", "t/two", "poll?afterSequence=3") == b"two"


def test_a_change_of_another_run_does_not_refuse_a_keep_but_one_of_every_run_does() -> None:
    cache = ReadCache()
    read_at = cache.epoch
    cache.forget("t/two")
    cache.keep("t", "t/one", "snapshot", b"one", read_at)
    assert cache.get("t", "t/one", "snapshot") == b"one"
    read_at = cache.epoch
    cache.forget("t/two")
    cache.forget_all()
    cache.keep("t", "t/one", "snapshot", b"one", read_at)
    assert cache.get("t", "t/one", "snapshot") is None


def test_a_change_of_a_run_drops_its_tenants_list_and_no_other_tenants() -> None:
    cache = ReadCache()
    for tenant in ("t", "u"):
        cache.keep(tenant, tenant_scope(tenant), "list?limit=5", tenant.encode(), cache.epoch)
    read_at = cache.epoch
    cache.forget("t/one")
    assert cache.get("t", tenant_scope("t"), "list?limit=5") is None
    assert cache.get("u", tenant_scope("u"), "list?limit=5") == b"u"
    cache.keep("t", tenant_scope("t"), "list?limit=5", b"stale", read_at)  # read across it
    assert cache.get("t", tenant_scope("t"), "list?limit=5") is None
