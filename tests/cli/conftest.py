"""The CLI tier (G15): the real `wopeval` command in a subprocess against a real host.

One `wopeval serve` subprocess per session, on a temporary data directory and
the small project in `project/`, with an explicit API key. Each test runs the
CLI as a user would and reads its stdout, stderr and exit code.
"""

from __future__ import annotations

import secrets
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ._support import PROJECT, WOPEVAL, ServedHost, child_env, free_port

TENANT = "clitest"
START_DEADLINE_SECONDS = 60.0


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedHost]:
    data_dir = tmp_path_factory.mktemp("served")
    port = free_port()
    key = "cli_" + secrets.token_urlsafe(24)
    log = (data_dir / "serve.log").open("w")
    process = subprocess.Popen(
        [
            WOPEVAL,
            "serve",
            "--port",
            str(port),
            "--data-dir",
            str(data_dir),
            "--project",
            str(PROJECT),
            "--api-key",
            f"{TENANT}={key}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=child_env(),
    )
    host = ServedHost(f"http://127.0.0.1:{port}", key)
    try:
        _wait_until_up(host, process, data_dir / "serve.log")
        yield host
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        log.close()


def _wait_until_up(host: ServedHost, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_DEADLINE_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"wopeval serve exited: {log.read_text()}")
        try:
            with host.http() as client:
                if client.get("/.well-known/openwop").status_code == 200:
                    return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"wopeval serve did not come up: {log.read_text()}")
