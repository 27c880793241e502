"""Run `wopeval conformance` against a freshly started `wopeval serve`, on SQLite and PostgreSQL.

`make test` calls this after pytest, so CI proves the published command passes
against our own host exactly as a user would run it: two processes, loopback,
two tenants. Exit status is non-zero when any leg on any backend did not pass.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

BIN = Path(sys.executable).parent
POSTGRES_ADMIN = os.environ.get(
    "WOPEVAL_TEST_POSTGRES_ADMIN", "postgresql://postgres@127.0.0.1:5432/test"
)
REPORTS = Path("reports")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def postgres_database() -> Iterator[str]:
    name = f"wopeval_conformance_{secrets.token_hex(4)}"
    with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    finally:
        with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def serving(database_url: str | None, key_a: str, key_b: str) -> Iterator[str]:
    port = free_port()
    with tempfile.TemporaryDirectory() as data_dir:
        command = [str(BIN / "wopeval"), "serve", "--port", str(port), "--data-dir", data_dir]
        command += ["--api-key", f"tenant-a={key_a}", "--api-key", f"tenant-b={key_b}"]
        if database_url:
            command += ["--database-url", database_url]
        server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        base_url = f"http://127.0.0.1:{port}"
        try:
            _wait_until_up(base_url, server)
            yield base_url
        finally:
            server.terminate()
            server.wait(timeout=30)


def _wait_until_up(base_url: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            detail = server.stderr.read().decode() if server.stderr else ""
            raise SystemExit(f"wopeval serve exited early: {detail}")
        try:
            with urllib.request.urlopen(f"{base_url}/.well-known/openwop", timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"wopeval serve did not answer at {base_url} within 60 s")


def check(backend: str, database_url: str | None) -> int:
    key_a, key_b = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    with serving(database_url, key_a, key_b) as base_url:
        report = REPORTS / f"conformance-{backend}.json"
        print(f"conformance-self-check: {backend} at {base_url}", flush=True)
        return subprocess.call(
            [
                str(BIN / "wopeval"),
                "conformance",
                "--base-url",
                base_url,
                "--api-key",
                key_a,
                "--tenant-b-api-key",
                key_b,
                "--report",
                str(report),
            ]
        )


def main() -> int:
    REPORTS.mkdir(exist_ok=True)
    failures = check("sqlite", None)
    with postgres_database() as url:
        failures += check("postgres", url)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
