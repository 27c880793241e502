"""What resolving an eval run makes of a kept suite version alone is made at its first run
and read by the later ones (engine/eval_runs/eval_plan.py `_VersionMade`): its task plans,
the host's checks of it, the graders it names. Each is its own version's and its own
tenant's; a check passed under some features is not taken for a pass under others; and a
run with no fixture source reads no recorded tool listing."""

from __future__ import annotations

import asyncio
import gc
import re
import weakref
from pathlib import Path
from typing import Any

import pytest

from _backends import Backend
from _hosts import TENANT, running_host
from _statements import statements_matching
from wopeval.engine.catalog.catalog import ParsedSuites
from wopeval.engine.catalog.graders import CustomGrader
from wopeval.engine.eval_runs import eval_plan
from wopeval.engine.eval_runs.eval_plan import EvalPlan, prepare_version, resolve_eval
from wopeval.hosting.host import Host
from wopeval.settings import EvalFeatures
from wopeval.wire import errors
from wopeval.wire.principal import Principal
from wopeval.wire.runs import CreateRunRequest

SUITE_ID = "engine.evals.kept-plans"
OTHER_TENANT = "globex"
GRADER = "engine.kept-plans.grader"
LISTINGS_READ = re.compile(r"\s*SELECT\b.*\bFROM run_tool_listings\b", re.DOTALL | re.IGNORECASE)


def _document(version: str, tag: str, **task: Any) -> dict[str, Any]:
    """One task answering `tag`, served one fixture entry (`task` adds to the task)."""
    return {
        "suiteId": SUITE_ID,
        "version": version,
        "modes": ["golden", "live-shadow"],
        "tasks": [
            {
                "taskId": "a",
                "input": {"calls": [], "answer": tag},
                "expected": {"kind": "golden", "match": {"strategy": "exact", "value": tag}},
                "fixtures": {"toolResponses": [{"tool": "kept:lookup", "response": tag}]},
                **task,
            }
        ],
    }


def _request(version: str, *modes: str) -> CreateRunRequest:
    return CreateRunRequest(
        mode="eval",
        evalSuiteRef=f"{SUITE_ID}@{version}",
        agentId="conformance.scripted-agent",
        evalModes=list(modes) if modes else None,
    )


async def _resolve(
    host: Host,
    request: CreateRunRequest,
    tenant: str = TENANT,
    features: EvalFeatures | None = None,
) -> EvalPlan:
    async with host.store.reading() as uow:
        return await resolve_eval(
            request,
            tenant=tenant,
            features=features or host.settings.eval,
            catalog=host.catalog,
            uow=uow,
            live_tools=True,
        )


def _tag(plan: EvalPlan) -> Any:
    """The answer the plan's one task expects, and its served entry's (both the version's)."""
    (task,) = plan.tasks
    assert task.task.expected.match is not None
    served = None if task.served is None else [entry.response for entry in task.served]
    return task.task.expected.match.value, served


def test_a_kept_version_s_task_plans_are_made_once_and_are_its_own_tenant_s_and_version_s(
    backend: Backend, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with running_host(backend, tmp_path / "data") as host:
            ours, theirs = Principal(TENANT, "key-test"), Principal(OTHER_TENANT, "key-other")
            await host.engine.publish_suite(ours, _document("1.0.0", "one"))
            # Made with the version, at its publish (as its fixture indexes are).
            kept = host.catalog.parsed_suites.get(TENANT, _document("1.0.0", "one"))
            published = eval_plan._MADE[kept].plans[False]
            assert published.pairs == (("a", 0),)
            first = await _resolve(host, _request("1.0.0"))
            assert first.tasks is published
            assert _tag(first) == ("one", ["one"])
            again = await _resolve(host, _request("1.0.0"))
            assert again.tasks is first.tasks  # made once, for every run of the version
            # Live-shadow ignores fixtures: plans of their own, and the others unchanged.
            shadow = await _resolve(host, _request("1.0.0", "live-shadow"))
            assert _tag(shadow) == ("one", None)
            assert (await _resolve(host, _request("1.0.0"))).tasks is first.tasks
            # Another version of the same suite, published after: its own plans.
            await host.engine.publish_suite(ours, _document("1.0.1", "two"))
            assert _tag(await _resolve(host, _request("1.0.1"))) == ("two", ["two"])
            # Another tenant's suite of the same id and version: its own plans.
            await host.engine.publish_suite(theirs, _document("1.0.0", "theirs"))
            their_plan = await _resolve(host, _request("1.0.0"), OTHER_TENANT)
            assert _tag(their_plan) == ("theirs", ["theirs"])
            assert _tag(await _resolve(host, _request("1.0.0"))) == ("one", ["one"])

    asyncio.run(scenario())


def test_a_version_checked_under_some_features_is_checked_again_under_others(
    backend: Backend, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with running_host(backend, tmp_path / "data") as host:
            principal = Principal(TENANT, "key-test")
            entry = {"tool": "kept:lookup", "response": "x", "isError": True}
            erring = {"fixtures": {"toolResponses": [entry]}}
            await host.engine.publish_suite(principal, _document("1.0.0", "one", **erring))
            await _resolve(host, _request("1.0.0"))
            features = host.settings.eval.model_copy(update={"fixture_errors": False})
            for _ in range(2):
                with pytest.raises(errors.ValidationFailed) as refused:
                    await _resolve(host, _request("1.0.0"), features=features)
                assert "does not replay tool errors" in refused.value.message

    asyncio.run(scenario())


def test_a_kept_version_naming_a_grader_the_host_no_longer_declares_is_refused(
    backend: Backend, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with running_host(backend, tmp_path / "data") as host:
            host.catalog.graders[GRADER] = CustomGrader(GRADER, lambda *_: True)
            principal = Principal(TENANT, "key-test")
            match = {"strategy": "custom", "grader": GRADER}
            custom = {"expected": {"kind": "golden", "match": match}}
            await host.engine.publish_suite(principal, _document("1.0.0", "one", **custom))
            plan = await _resolve(host, _request("1.0.0"))
            assert set(plan.graders) == {GRADER}
            del host.catalog.graders[GRADER]
            with pytest.raises(errors.ValidationFailed) as refused:
                await _resolve(host, _request("1.0.0"))
            assert refused.value.message.startswith("tasks[0].expected.match.grader:")

    asyncio.run(scenario())


def test_an_eval_run_with_no_fixture_source_reads_no_recorded_tool_listing(
    backend: Backend, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with running_host(backend, tmp_path / "data") as host:
            principal = Principal(TENANT, "key-test")
            await host.engine.publish_suite(principal, _document("1.0.0", "one"))
            with statements_matching(host.store.engine, LISTINGS_READ) as reads:
                await _resolve(host, _request("1.0.0"))
            assert reads == []

    asyncio.run(scenario())


def test_what_is_made_of_a_version_goes_when_the_catalog_lets_the_version_go() -> None:
    """Kept by the kept version, not beside it: bounded by the catalog's limit."""
    parsed = ParsedSuites(limit=1)
    first = parsed.get(TENANT, _document("1.0.0", "one"))
    prepare_version(first, EvalFeatures())
    made = weakref.ref(eval_plan._MADE[first])
    del first
    parsed.get(TENANT, _document("1.0.1", "two"))  # the catalog lets 1.0.0 go
    gc.collect()
    assert made() is None
