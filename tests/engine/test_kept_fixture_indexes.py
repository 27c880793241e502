"""A suite version's fixture indexes are made once, with the version as the catalog keeps it
(engine/catalog/catalog.py `KeptSuite`), and shared by every run of it: each trial still
consumes its own entries (`FixtureCursor`), each version and each tenant has its own
indexes, and a host started again makes them again from the store."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from _backends import Backend
from _hosts import TENANT
from wopeval.evals import _matcher
from wopeval.hosting.host import Host
from wopeval.settings import Settings
from wopeval.wire.principal import Principal
from wopeval.wire.runs import CreateRunRequest, RunStatus

SUITE_ID = "engine.evals.kept-indexes"
OTHER_TENANT = "globex"


def _document(version: str, tag: str, *, trials: int = 2) -> dict[str, Any]:
    """One task of two trials whose three calls are each served by their own entry (the
    first two alike: consumed in list order), then answers `tag`."""
    calls = [{"q": 1}, {"q": 1}, {"q": 2}]
    return {
        "suiteId": SUITE_ID,
        "version": version,
        "modes": ["golden"],
        "trials": trials,
        "tasks": [
            {
                "taskId": "a",
                "input": {
                    "calls": [{"tool": "kept:lookup", "args": args} for args in calls],
                    "answer": tag,
                },
                "expected": {"kind": "golden", "match": {"strategy": "exact", "value": tag}},
                "fixtures": {
                    "onMiss": "fail",
                    "toolResponses": [
                        {"tool": "kept:lookup", "args": args, "response": f"{tag}-{index}"}
                        for index, args in enumerate(calls)
                    ],
                },
            }
        ],
    }


def _eval(version: str) -> CreateRunRequest:
    return CreateRunRequest(
        mode="eval", evalSuiteRef=f"{SUITE_ID}@{version}", agentId="conformance.scripted-agent"
    )


@asynccontextmanager
async def _host(data_dir: Path, database_url: str | None) -> AsyncIterator[Host]:
    host = await Host.start(
        Settings(
            data_dir=data_dir,
            database_url=database_url,
            api_keys={TENANT: "k" * 32, OTHER_TENANT: "g" * 32},
        )
    )
    try:
        yield host
    finally:
        await host.stop()


def _count_builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the fixture indexes made from now on (one entry each, its entry count)."""
    builds: list[int] = []
    made = _matcher.FixtureIndex.__init__

    def counted(self: _matcher.FixtureIndex, entries: Any, on_miss: Any) -> None:
        builds.append(len(entries))
        made(self, entries, on_miss)

    monkeypatch.setattr(_matcher.FixtureIndex, "__init__", counted)
    return builds


async def _passes(host: Host, principal: Principal, *requests: CreateRunRequest) -> list[Any]:
    """Runs `requests` at once; each passes, every trial served all its calls."""
    records = [await host.engine.create_eval_run(principal, request) for request in requests]
    await host.engine.wait_idle()
    ended = [await host.engine.get_run(principal, record.run_id) for record in records]
    for run in ended:
        assert run.status is RunStatus.COMPLETED, run.error
        assert run.summary is not None
        assert run.summary.passed is True
        assert run.summary.fixtureMissCount == 0
    return ended


def test_runs_of_a_version_share_its_index_and_each_trial_consumes_its_own_entries(
    backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> None:
        builds = _count_builds(monkeypatch)
        async with _host(tmp_path / "data", backend.new_database()) as host:
            ours = Principal(TENANT, "key-test")
            await host.engine.publish_suite(ours, _document("1.0.0", "one"))
            assert builds == [3]
            # Two runs at once, two trials each: had the consumption been the index's,
            # the second trial (and run) would have found every entry used up.
            await _passes(host, ours, _eval("1.0.0"), _eval("1.0.0"))
            assert builds == [3]
            # A new version of the same suite: its own index, its own entries.
            await host.engine.publish_suite(ours, _document("1.0.1", "two"))
            assert builds == [3, 3]
            await _passes(host, ours, _eval("1.0.1"), _eval("1.0.0"))
            assert builds == [3, 3]
            # Another tenant's suite of the same id and version: its own index.
            theirs = Principal(OTHER_TENANT, "key-other")
            await host.engine.publish_suite(theirs, _document("1.0.0", "theirs"))
            assert builds == [3, 3, 3]
            await _passes(host, theirs, _eval("1.0.0"))
            await _passes(host, ours, _eval("1.0.0"))
            assert builds == [3, 3, 3]

    asyncio.run(scenario())


def test_a_host_started_again_makes_a_kept_version_s_index_once_from_the_store(
    backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> None:
        url = backend.new_database()
        ours = Principal(TENANT, "key-test")
        async with _host(tmp_path / "data", url) as host:
            await host.engine.publish_suite(ours, _document("1.0.0", "one"))
        builds = _count_builds(monkeypatch)
        async with _host(tmp_path / "data", url) as host:
            await _passes(host, ours, _eval("1.0.0"))
            assert builds == [3]
            await _passes(host, ours, _eval("1.0.0"))
            assert builds == [3]

    asyncio.run(scenario())
