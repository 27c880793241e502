"""The CLI tier (G15): the real `wopeval` command in a subprocess against a real host.

One `wopeval serve` subprocess per session, on a temporary data directory and
the small project in `project/`, with an explicit API key. Each test runs the
CLI as a user would and reads its stdout, stderr and exit code.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest

from ._support import PROJECT, ServedHost, serve

TENANT = "clitest"


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedHost]:
    key = "cli_" + secrets.token_urlsafe(24)
    data_dir = tmp_path_factory.mktemp("served")
    with serve(data_dir, "--project", str(PROJECT), "--api-key", f"{TENANT}={key}") as host:
        yield host
