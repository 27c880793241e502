"""A suite version its tenant publishes is kept parsed: its first eval run neither validates
the document again nor reads it from the store (engine/host.py `Engine.publish_suite`)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Text, cast, select, text

from _backends import Backend
from _hosts import TENANT, running_host
from _statements import SUITE_READ, statements_matching
from wopeval.engine.catalog import catalog
from wopeval.hosting.host import Host
from wopeval.settings import Settings
from wopeval.store import tables
from wopeval.wire import errors, json_text
from wopeval.wire.principal import Principal
from wopeval.wire.runs import CreateRunRequest, RunStatus

PRINCIPAL = Principal(TENANT, "key-test")


PUBLISHED_EVAL = CreateRunRequest(
    mode="eval",
    evalSuiteRef="engine.evals.published@1.0.0",
    agentId="conformance.scripted-agent",
)
"""An eval run of the published suite by the scripted agent."""


def _document(answer: str) -> dict[str, Any]:
    return {
        "suiteId": "engine.evals.published",
        "version": "1.0.0",
        "modes": ["golden"],
        "tasks": [
            {"taskId": "a", "input": {"calls": [], "answer": answer},
             "expected": {"kind": "golden", "match": {"strategy": "exact", "value": answer}}}
        ],
    }  # fmt: skip


def test_a_published_version_runs_without_a_second_parse_or_a_store_read(
    backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> None:
        async with running_host(backend, tmp_path / "data") as host:
            stored, created = await host.engine.publish_suite(PRINCIPAL, _document("echo"))
            assert created
            assert stored["suiteId"] == "engine.evals.published"
            again, created = await host.engine.publish_suite(PRINCIPAL, _document("echo"))
            assert (again, created) == (stored, False)
            with pytest.raises(errors.SuiteVersionExists):
                await host.engine.publish_suite(PRINCIPAL, _document("other"))

            def refuse(_document: object) -> None:
                raise AssertionError("a published version was parsed again")

            monkeypatch.setattr(catalog, "parse_suite", refuse)
            with statements_matching(host.store.engine, SUITE_READ) as reads:
                record = await host.engine.create_eval_run(PRINCIPAL, PUBLISHED_EVAL)
                await host.engine.wait_idle()
            ended = await host.engine.get_run(PRINCIPAL, record.run_id)
            assert ended.status is RunStatus.COMPLETED
            assert ended.summary is not None
            assert ended.summary.passed is True
            assert reads == []

    asyncio.run(scenario())


def test_an_eval_run_s_plan_keeps_the_suite_as_the_text_it_was_published_as(
    backend: Backend, tmp_path: Path
) -> None:
    """The plan embeds the text written when the version was published, not the suite
    written again: the same bytes as the suite's row, and a change made to the kept
    document after publishing (which nothing does: it shows what is written) is not in it."""

    async def scenario() -> None:
        async with running_host(backend, tmp_path / "data") as host:
            stored, _ = await host.engine.publish_suite(PRINCIPAL, _document("echo"))
            stored["x-not-published"] = True
            record = await host.engine.create_eval_run(PRINCIPAL, PUBLISHED_EVAL)
            await host.engine.wait_idle()
            async with host.store.engine.connect() as connection:
                published = (
                    await connection.execute(text("SELECT CAST(document AS TEXT) FROM suites"))
                ).scalar_one()
                plan = (
                    await connection.execute(
                        text("SELECT CAST(plan AS TEXT) FROM run_plans WHERE run_id = :run"),
                        {"run": record.run_id},
                    )
                ).scalar_one()
            assert plan.startswith('{"suite":' + published + ',"agentId":')
            assert "x-not-published" not in plan
            ended = await host.engine.get_run(PRINCIPAL, record.run_id)
            assert ended.status is RunStatus.COMPLETED

    asyncio.run(scenario())


def test_an_eval_run_s_plan_is_the_same_text_from_a_kept_version_s_text_and_from_the_store(
    backend: Backend, tmp_path: Path
) -> None:
    """A run of a version published here stores its plan with the version's kept text joined
    in (`StoredPlan.written`); a run of it after a restart, read back from the store, writes
    its plan whole, as every plan was written before: both store the same text, which is
    the store's codec's text of the plan's value."""

    async def plan_of_a_run(host: Host) -> str:
        record = await host.engine.create_eval_run(PRINCIPAL, PUBLISHED_EVAL)
        await host.engine.wait_idle()
        async with host.store.engine.connect() as connection:
            query = select(cast(tables.run_plans.c.plan, Text)).where(
                tables.run_plans.c.run_id == record.run_id
            )
            return str((await connection.execute(query)).scalar_one())

    async def scenario() -> None:
        settings = Settings(
            data_dir=tmp_path / "data",
            database_url=backend.new_database(),
            api_keys={TENANT: "k" * 32},
        )
        host = await Host.start(settings)
        try:
            await host.engine.publish_suite(PRINCIPAL, _document("é ✓ \U0001f600"))
            assert host.catalog.parsed_suites.get(TENANT, _document("x")).text is not None
            from_text = await plan_of_a_run(host)
        finally:
            await host.stop()
        host = await Host.start(settings)
        try:
            from_store = await plan_of_a_run(host)
            assert host.catalog.parsed_suites.get(TENANT, _document("x")).text is None
        finally:
            await host.stop()
        assert from_text == from_store
        assert from_text == json_text.compact(json_text.parse(from_text))

    asyncio.run(scenario())
