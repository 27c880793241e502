"""The CLI tier (G15): the real `wopeval` command in a subprocess against a real host.

One `wopeval serve` subprocess per session, on a temporary data directory and
the small project in `project/`, with an explicit API key. Each test runs the
CLI as a user would and reads its stdout, stderr and exit code.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest

from _processes import ServeOptions, ServeProcess

from ._support import PROJECT, ServedHost

TENANT = "clitest"


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedHost]:
    data_dir = tmp_path_factory.mktemp("served")
    key = "cli_" + secrets.token_urlsafe(24)
    options = ServeOptions(data_dir, None, (f"{TENANT}={key}",), PROJECT)
    serve = ServeProcess(options, data_dir / "serve.log")
    try:
        serve.wait_up()
        yield ServedHost(serve.url, key)
    finally:
        serve.stop()
