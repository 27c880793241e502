"""Commands load only what they need (issue 28 §3): modules checked, not seconds.

`wopeval --version` and `--help` import no command module, so none of the client,
the store, the server stack or a model SDK; `--help` still lists every command with
the first paragraph of its own help. An embedded command on a database already at
the newest revision loads neither Alembic nor a model SDK it has no agent for.
A listing against a running host, named by `--url` or found through the data
directory it serves, loads the wire client and the listing's own modules: no server
stack, no store, and none of the client's other parts (baselines, reports, the
embedded host).
"""

from __future__ import annotations

import inspect
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from _processes import WOPEVAL, ServeOptions, ServeProcess, child_env
from wopeval.cli.main import COMMANDS

HOST_ERROR = 4
AT_START_UP = (
    "fastapi",
    "starlette",
    "uvicorn",
    "sqlalchemy",
    "alembic",
    "pydantic",
    "httpx",
    "openwop_client",
    "anthropic",
    "openai",
    "mcp",
    "procrastinate",
    "wopeval.engine",
    "wopeval.store",
    "wopeval.client",
    "wopeval.api",
    "wopeval.agents",
    "wopeval.wire",
    "wopeval.hosting.ownership",
    "wopeval.hosting.host",
)
"""Packages none of which `--version` or `--help` may import (a prefix names a package)."""

NOT_FOR_A_REMOTE_HOST = tuple(
    name
    for name in AT_START_UP
    if name not in ("pydantic", "httpx", "wopeval.client", "wopeval.wire")
)
"""A command given `--url` speaks the wire: it starts no host, so loads no server stack."""
NOT_FOR_A_REMOTE_LISTING = (
    *NOT_FOR_A_REMOTE_HOST,
    "wopeval.hosting.app",
    "wopeval.hosting.credentials",
    "wopeval.client._baselines",
    "wopeval.client._embedded",
    "wopeval.client._suite_from_runs",
    "wopeval.client._request",
    "wopeval.reports.html",
    "wopeval.reports.markdown",
    "wopeval.evals._verdict",
    "wopeval.settings",
    "pydantic_settings",
    "wopeval.reports._why",
    "wopeval.reports.junit",
    "wopeval.wire.summary",
    "wopeval.wire.suite",
    "wopeval.wire.task_detail",
    "wopeval.wire.annotations",
    "wopeval.wire.calibration",
    "wopeval.wire.invocations",
    "wopeval.wire.events",
    "wopeval.wire._event_base",
    "wopeval.wire.runs",
    "wopeval.client._events_page",
    "click",  # these three: HTTPX's command line
    "pygments",
    "rich.syntax",
)
"""What `runs list --url` against a plain-http host never loads: the server stack, the
client's parts a listing does not use (each package imports a name's module when it
is read: wopeval/_lazy.py), nor the settings; nor the summary, suite and task models
(a listing styles a verdict: wire/verdict.py), the events poll's and the optional
routes' models (read by their client methods), nor HTTPX's own command line
(client/_wire.py)."""
NOT_FOR_A_SERVED_LISTING = tuple(
    name
    for name in NOT_FOR_A_REMOTE_LISTING
    if name
    not in (
        "wopeval.settings",
        "pydantic_settings",
        "wopeval.client._embedded",
    )
)
"""`runs list --data-dir D` while a `wopeval serve` owns D's SQLite file: it reads the
settings and finds the serve before it would take the lease (hosting/discovery.py)."""
NOT_FOR_A_LISTING = (
    "alembic",
    "anthropic",
    "openai",
    "mcp",
    "mcp_types",
    "psycopg",
    "pygments",
    "rich.syntax",
    "wopeval.api.ui.pages",
    "jinja2",
    "regex",
    "sqlalchemy.dialects.postgresql",
)
"""What an embedded `runs list` on SQLite at head, with no LLM agent, no MCP server and no
regex expectation, never loads (uvicorn's own command line loads Click): nor the dashboard's
pages, built on the first request under `/ui` (api/ui/__init__.py), nor PostgreSQL's
dialect (store/tables.py)."""


def _imported(*args: str, cwd: Path | None = None, code: int = 0) -> set[str]:
    """The modules `wopeval ARGS` imported, read from `-X importtime`; it exits `code`."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", WOPEVAL, *args],
        capture_output=True,
        text=True,
        env=child_env(),
        cwd=cwd,
        timeout=120,
        check=False,
    )
    assert done.returncode == code, done.stdout + done.stderr
    return {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def _within(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(
        name for name in modules for package in packages if (name + ".").startswith(package + ".")
    )


@pytest.mark.parametrize("option", ["--version", "--help"])
def test_version_and_help_import_no_heavy_module(option: str) -> None:
    modules = _imported(option)
    assert "wopeval.cli.main" in modules  # the command really was timed
    assert _within(modules, AT_START_UP) == []
    assert _within(modules, tuple(d.target.partition(":")[0] for d in COMMANDS)) == []
    if option == "--help":  # the installed version is read by `--version` alone
        assert _within(modules, ("importlib.metadata",)) == []


def test_help_lists_every_command_with_its_own_first_paragraph() -> None:
    for deferred in COMMANDS:
        command = deferred.load()
        own = inspect.cleandoc(command.short_help or command.help or "").split("\n\n")[0]
        assert deferred.summary == own.strip(), deferred.name
    listed = subprocess.run(
        [WOPEVAL, "--help"], capture_output=True, text=True, env=child_env(), check=True
    ).stdout
    for deferred in COMMANDS:
        first_line = re.escape(deferred.summary.splitlines()[0])
        assert re.search(rf"│ {deferred.name} +{first_line}", listed), deferred.name


def test_a_command_on_a_remote_host_loads_no_server_stack() -> None:
    with socket.socket() as closed:  # bound, never listening: the connection is refused
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}"
        modules = _imported("runs", "list", "--url", url, "--api-key", "k", code=HOST_ERROR)
    assert "wopeval.client" in modules
    assert _within(modules, NOT_FOR_A_REMOTE_HOST) == []


def test_a_listing_from_a_running_serve_loads_no_server_stack_nor_store(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "served"
    serve = ServeProcess(ServeOptions(data_dir, None), tmp_path / "serve.log")
    try:
        serve.wait_up()
        key = (data_dir / "dev-api-key").read_text().strip()
        remote = _imported("runs", "list", "--url", serve.url, "--api-key", key)
        assert "wopeval.cli._render" in remote  # it listed
        assert _within(remote, NOT_FOR_A_REMOTE_LISTING) == []
        served = _imported("runs", "list", "--data-dir", str(data_dir))
        assert "wopeval.hosting.discovery" in served  # it found the serve through D
        assert _within(served, NOT_FOR_A_SERVED_LISTING) == []
    finally:
        serve.stop()


def test_an_embedded_listing_at_head_loads_neither_alembic_nor_a_model_sdk(
    tmp_path: Path,
) -> None:
    listing = ("runs", "list", "--data-dir", str(tmp_path / "data"))
    first = _imported(*listing, cwd=tmp_path)  # a new database: Alembic builds it
    assert "alembic" in first
    again = _imported(*listing, cwd=tmp_path)
    assert "wopeval.hosting.host" in again  # an embedded host did start
    assert _within(again, NOT_FOR_A_LISTING) == []
