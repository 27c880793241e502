"""Tenants by construction (docs/decisions.md): the store's content reads take a `RunHandle`,
which only the store's ownership check issues, so a read by bare run id does not type-check
and a handle cannot be made, or copied into another run, outside the store."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import re
from pathlib import Path

import pytest
from mypy import api as mypy_api

import wopeval
from wopeval.store import OwnedRun, RunHandle

from .engine._store import TENANT, new_record, open_store

PACKAGE = Path(wopeval.__file__).parent
REPOSITORY = PACKAGE.parents[1]
SEALS = {"_ISSUER", "_Issuer"}

BARE_READS = {
    "events.read": "uow.events.read(RUN, after=-1)",
    "events.all_docs": "uow.events.all_docs(RUN)",
    "events.invoked_agents": "uow.events.invoked_agents(RUN)",
    "events.invoked_agents_of": "uow.events.invoked_agents_of([RUN])",
    "events.docs_at": "uow.events.docs_at(RUN, [0])",
    "events.docs_of_types": 'uow.events.docs_of_types(RUN, ["run.started"])',
    "tool_calls.page": "uow.tool_calls.page(RUN, after=-1, limit=1)",
    "tool_calls.derive": 'uow.tool_calls.derive([RUN], "agent")',
    "tool_calls.count_live": "uow.tool_calls.count_live(RUN)",
    "tool_calls.copy": "uow.tool_calls.copy(RUN, RUN)",
    "model_calls.of_run": "uow.model_calls.of_run(RUN)",
    "model_calls.held_exchanges": 'uow.model_calls.held_exchanges(RUN, "agent")',
    "model_calls.count_live": "uow.model_calls.count_live(RUN)",
    "model_calls.own_counts": 'uow.model_calls.own_counts([RUN], "agent")',
    "invocations.of_run": "uow.invocations.of_run(RUN)",
    "invocations.listing": "uow.invocations.listing(RUN)",
    "invocations.said": 'uow.invocations.said(RUN, ["i"])',
    "invocations.idle_nodes": 'uow.invocations.idle_nodes(RUN, ["n"])',
    "trials.of_run": "uow.trials.of_run(RUN)",
    "trials.counts": "uow.trials.counts(RUN)",
    "trials.landed": 'uow.trials.landed(RUN, ["t"])',
    "tool_listings.of_runs": 'uow.tool_listings.of_runs("acme", [RUN])',
    "derived_fixtures.rows": "uow.derived_fixtures.rows(RUN)",
    "runs.plan": "uow.runs.plan(RUN)",
}
"""Each content read of the store, called with a bare run id."""


def test_a_read_by_bare_run_id_does_not_type_check(tmp_path: Path) -> None:
    header = [
        "from wopeval.store import UnitOfWork",
        f'RUN = "{TENANT}/{"0" * 32}"',
        "async def reads(uow: UnitOfWork) -> None:",
    ]
    snippet = tmp_path / "bare_reads.py"
    calls = [f"    await {call}" for call in BARE_READS.values()]
    snippet.write_text("\n".join(header + calls) + "\n", encoding="utf-8")
    out, _, status = mypy_api.run(
        ["--config-file", str(REPOSITORY / "pyproject.toml"), str(snippet)]
    )
    refused = {
        int(line)
        for line in re.findall(r"bare_reads\.py:(\d+): error: .*\[(?:arg-type|list-item)\]", out)
    }
    lines = {len(header) + 1 + index: name for index, name in enumerate(BARE_READS)}
    accepted = [name for line, name in lines.items() if line not in refused]
    assert status == 1, out
    assert not accepted, f"reads that take a bare run id: {accepted}\n{out}"


def test_a_handle_is_issued_by_the_store_only(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with open_store(tmp_path) as store:
            record = new_record()
            async with store.transaction() as uow:
                await uow.runs.insert(record)
            async with store.reading() as uow:
                owned = await uow.runs.get(TENANT, record.run_id)
                foreign = await uow.runs.get("someone-else", record.run_id)
        assert owned is not None
        assert foreign is None
        assert (owned.handle.tenant, owned.handle.run_id) == (TENANT, record.run_id)
        with pytest.raises(TypeError):
            RunHandle(TENANT, record.run_id, object())  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            OwnedRun(record, object())  # type: ignore[arg-type]
        # A copy of an owned run naming another run would carry the handle along: refused.
        with pytest.raises(TypeError):
            dataclasses.replace(owned, run_id=f"{TENANT}/{'1' * 32}")
        assert owned.as_record() == record

    asyncio.run(scenario())


def _sources() -> list[Path]:
    return sorted(
        path
        for top in ("src", "tests", "bench", "scripts", "examples")
        for path in (REPOSITORY / top).rglob("*.py")
    )


def test_only_the_store_names_the_seal_of_a_handle() -> None:
    """The seal is private to store/_runs.py: no other module imports or names it (mypy
    would take it, as it takes any import of a private name)."""
    sealed_in = PACKAGE / "store" / "_runs.py"
    naming = []
    for path in _sources():
        if path == sealed_in:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = {node.id} if isinstance(node, ast.Name) else set()
            if isinstance(node, ast.Attribute):
                names = {node.attr}
            if isinstance(node, ast.ImportFrom):
                names = {alias.name for alias in node.names}
            if names & SEALS:
                naming.append(f"{path.relative_to(REPOSITORY)}:{getattr(node, 'lineno', 0)}")
    assert naming == []


HOST_SCOPE = {
    "src/wopeval/engine/runs/erasure.py": "erasure's cascade and retention erase runs they reach "
    "by id: the caller checked the first run is the tenant's, or it is the host's purge",
}
"""Where the host reads a run's content on its own account, with its reason."""


def test_the_host_scope_is_used_where_it_is_listed_only() -> None:
    using = set()
    for path in (REPOSITORY / "src").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "for_host":
                using.add(str(path.relative_to(REPOSITORY)))
    assert using == set(HOST_SCOPE)
