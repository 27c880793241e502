"""Helpers of the CLI tier: run `wopeval` in a subprocess, talk to the served host."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

PROJECT = Path(__file__).parent / "project"
WOPEVAL = str(Path(sys.executable).with_name("wopeval"))
COMMAND_TIMEOUT_SECONDS = 120.0
START_DEADLINE_SECONDS = 60.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The parent's environment without WOPEVAL_* or proxies, plus a wide terminal."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.upper().startswith("WOPEVAL_") and "proxy" not in name.lower()
    }
    # Wide enough that no table cell is cut, whatever the test machine's terminal.
    env["COLUMNS"] = "200"
    env.update(extra or {})
    return env


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str

    def json_file(self, path: Path) -> Any:
        return json.loads(path.read_text(encoding="utf-8"))


def run_cli(*args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None) -> Result:
    done = subprocess.run(
        [WOPEVAL, *args],
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_SECONDS,
        cwd=cwd,
        env=child_env(env),
        check=False,
    )
    return Result(done.returncode, done.stdout, done.stderr)


@dataclass(frozen=True)
class ServedHost:
    url: str
    api_key: str

    def remote(self) -> list[str]:
        return ["--url", self.url, "--api-key", self.api_key]

    def cli(self, *args: str, cwd: Path | None = None) -> Result:
        """`wopeval ARGS --url URL --api-key KEY`."""
        return run_cli(*args, *self.remote(), cwd=cwd)

    def http(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {self.api_key}", "OpenWOP-Version": "2.0"},
            trust_env=False,
            timeout=30.0,
        )


@contextmanager
def serve(data_dir: Path, *args: str, env: Mapping[str, str] | None = None) -> Iterator[ServedHost]:
    """`wopeval serve --port P --data-dir DATA_DIR ARGS` in a subprocess, until the block ends.

    ARGS must hold exactly one `--api-key TENANT=KEY`: the host is handed back with that key.
    """
    key = args[args.index("--api-key") + 1].partition("=")[2]
    port = free_port()
    log_path = data_dir / "serve.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [WOPEVAL, "serve", "--port", str(port), "--data-dir", str(data_dir), *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=child_env(env),
        )
        host = ServedHost(f"http://127.0.0.1:{port}", key)
        try:
            _wait_until_up(host, process, log_path)
            yield host
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)


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
