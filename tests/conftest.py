"""Fixtures shared by every tier: a clean environment and the database backends.

The backend fixture runs each test that asks for it on the embedded SQLite
default and on PostgreSQL. PostgreSQL is named by `WOPEVAL_TEST_POSTGRES_URL`
(default: the local `test` database); each test session creates its own
`wopeval_test_<random>_<n>` databases there and drops them at the end. An
unreachable PostgreSQL skips its parameters on a developer machine and fails
the run under CI (`CI` set).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings
from sqlalchemy.engine import make_url

from _backends import DEFAULT_POSTGRES_URL, Backend, PostgresDatabases

_PROXY_VARIABLES = {"http_proxy", "https_proxy", "all_proxy", "no_proxy"}

# `make mutation` runs the fast tests many times in one process (`--hypothesis-profile
# mutation`): each run re-imports the test classes, which Hypothesis would take for
# differing executors. Derandomised and without a database, every run draws the same
# examples, so a mutant is killed or not the same way each time; with no deadline, a
# mutant is never "killed" by a busy machine (the workers run in parallel).
settings.register_profile(
    "mutation",
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.differing_executors],
)


def _stdio_servers_get_a_real_stderr() -> None:
    """The MCP SDK's stdio client takes sys.stderr as it is when first imported for the
    stderr of every server it starts. Imported while pytest captures it, that is a capture
    file closed at the session's end; mutmut runs many sessions in one process, and in the
    later ones no stdio server would start. The process's own stderr stays open (pytest's
    descriptor capture still catches what a server writes to it)."""
    caught, sys.stderr = sys.stderr, sys.__stderr__
    try:
        import mcp.client.stdio  # noqa: F401
    finally:
        sys.stderr = caught


_stdio_servers_get_a_real_stderr()
# Everywhere else: a busy machine (two test workers on two cores) must not fail a property
# by its clock. The examples drawn are the same; only the timing checks are off.
settings.register_profile("wopeval", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("wopeval")


def _host_variable(name: str) -> bool:
    # OPENAI_*: a developer's key or base URL must never send a test's model call anywhere.
    upper = name.upper()
    return upper.startswith(("WOPEVAL_", "OPENAI_")) or name.lower() in _PROXY_VARIABLES


@pytest.fixture(scope="session", autouse=True)
def clean_environ() -> Iterator[dict[str, str]]:
    """Remove `WOPEVAL_*`, `OPENAI_*` and proxy variables for the whole session (G15).

    Settings are built explicitly by each test; nothing from the developer's
    shell may reach a host. Yields what was removed, so the test harness can
    read its own `WOPEVAL_TEST_*` knobs from it.
    """
    removed = {name: value for name, value in os.environ.items() if _host_variable(name)}
    with pytest.MonkeyPatch.context() as patch:
        for name in removed:
            patch.delenv(name)
        yield removed


@pytest.fixture(scope="session", autouse=True)
def queue_library_stays_out() -> Iterator[None]:
    """The whole suite runs hosts in this process on SQLite and PostgreSQL in-process mode;
    none of it may load the queue library (queue mode runs in subprocesses only)."""
    yield
    loaded = sorted(name for name in sys.modules if name.split(".")[0] == "procrastinate")
    assert loaded == [], f"the queue library was imported in-process: {loaded}"


@pytest.fixture(scope="session")
def postgres_databases(clean_environ: dict[str, str]) -> Iterator[PostgresDatabases]:
    url = clean_environ.get("WOPEVAL_TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL)
    databases = PostgresDatabases(url)
    problem = databases.reachable()
    if problem is not None:
        message = f"PostgreSQL at {make_url(url).render_as_string()} is unreachable ({problem})"
        if os.environ.get("CI"):
            pytest.fail(f"{message}; under CI the PostgreSQL backend is required")
        pytest.skip(f"{message}; set WOPEVAL_TEST_POSTGRES_URL or start PostgreSQL")
    try:
        yield databases
    finally:
        databases.drop_all()


@pytest.fixture(
    scope="session",
    params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)],
)
def backend(request: pytest.FixtureRequest) -> Backend:
    name: str = request.param
    if name == "sqlite":
        return Backend(name)
    databases: PostgresDatabases = request.getfixturevalue("postgres_databases")
    return Backend(name, databases)


LONG_FILES = (
    "tests/fuzz/",
    "tests/frameworks/",
    "tests/cli/test_readme.py",
    "tests/cli/test_ci_recipe.py",
    "tests/e2e/llm/test_erasure_scan.py",
    "tests/browser/",
)
"""Test files that take minutes each. `make test` hands whole files to its workers in the
order collected (`--dist loadfile --no-loadscope-reorder`); xdist's own order, most tests
first, put these one-test files last, where one of them kept a worker busy for minutes
after the other had run out of files."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Long files first, in the order listed; the rest in their collected order."""
    root = config.rootpath

    def rank(item: pytest.Item) -> int:
        path = item.path.relative_to(root).as_posix()
        return next(
            (index for index, prefix in enumerate(LONG_FILES) if path.startswith(prefix)),
            len(LONG_FILES),
        )

    items.sort(key=rank)
