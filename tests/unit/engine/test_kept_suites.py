"""A tenant's suite version, once parsed for an eval, is not read from the store again.

A published version never changes and is never deleted, so the catalog keeps the
document beside the parsed suite (engine/catalog/catalog.py `ParsedSuites`): the next eval of it
reads nothing. What it keeps is its tenant's own: another tenant's version of the same
id is read from the store as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _statements import SUITE_READ, statements_matching
from wopeval.engine.catalog.catalog import Catalog, KeptSuite, ParsedSuites
from wopeval.engine.eval_runs.eval_plan import find_suite
from wopeval.engine.runlog.steps import now

from ._store import TENANT, open_store

OTHER_TENANT = "globex"


def _document(answer: str, version: str = "1.0.0") -> dict[str, Any]:
    return {
        "suiteId": "unit.evals.kept",
        "version": version,
        "modes": ["golden"],
        "tasks": [
            {"taskId": "a", "input": None,
             "expected": {"kind": "golden", "match": {"strategy": "exact", "value": answer}},
             "fixtures": {"toolResponses": [{"tool": "t:x", "args": {}, "response": answer}]}}
        ],
    }  # fmt: skip


async def test_a_parsed_version_is_served_without_a_store_read_and_only_to_its_tenant(
    tmp_path: Path,
) -> None:
    ours, theirs = _document("ours"), _document("theirs")
    async with open_store(tmp_path) as store:
        async with store.transaction() as uow:
            await uow.suites.put(TENANT, "unit.evals.kept", "1.0.0", ours, now())
            await uow.suites.put(OTHER_TENANT, "unit.evals.kept", "1.0.0", theirs, now())
        catalog = Catalog()
        with statements_matching(store.engine, SUITE_READ) as reads:
            async with store.reading() as uow:
                first = await find_suite("unit.evals.kept@1.0.0", TENANT, catalog, uow)
                assert first == ours
                assert len(reads) == 1
                assert first is not None
                catalog.parsed_suites.get(TENANT, first)  # what an eval's create does with it
                again = await find_suite("unit.evals.kept@1.0.0", TENANT, catalog, uow)
                assert again == ours
                assert len(reads) == 1
                other = await find_suite("unit.evals.kept@1.0.0", OTHER_TENANT, catalog, uow)
                assert other == theirs
                assert len(reads) == 2


def test_a_kept_version_s_fixture_indexes_are_its_own_tenant_s_and_version_s() -> None:
    parsed = ParsedSuites()
    ours = parsed.get(TENANT, _document("ours"))
    theirs = parsed.get(OTHER_TENANT, _document("theirs"))
    newer = parsed.get(TENANT, _document("newer", "1.0.1"))

    def answers(kept: KeptSuite) -> tuple[bytes | None, ...]:
        return kept.fixture_indexes["a"].answers

    assert answers(ours) == (b'"ours"',)
    assert answers(theirs) == (b'"theirs"',)
    assert answers(newer) == (b'"newer"',)
    # Every later run of a kept version reads the same index (made once).
    again = parsed.get(TENANT, _document("ours"))
    assert again.fixture_indexes["a"] is ours.fixture_indexes["a"]
    assert answers(parsed.get(OTHER_TENANT, _document("theirs"))) == (b'"theirs"',)


def test_a_kept_version_s_tasks_have_their_expected_dumped_once_with_it() -> None:
    kept = ParsedSuites().get(TENANT, _document("ours"))
    task = kept.suite.tasks[0]
    # Dumped as the version was kept (not at its first run's first trial), as written.
    assert "expected_document" in vars(task)
    assert task.expected_document == {
        "kind": "golden",
        "match": {"strategy": "exact", "value": "ours"},
    }
    assert task.expected_document is task.expected_document
