"""ASGI apps under uvicorn in a background thread on a loopback port the OS picks.

Used for the real wopeval host and for the misbehaving proxies in front of it.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from starlette.types import ASGIApp

from wopeval.hosting.app import host_app
from wopeval.hosting.loopback import loopback_socket, quiet_server
from wopeval.settings import Settings

TENANT_A = "tenant-a"
TENANT_B = "tenant-b"
_DEADLINE_SECONDS = 30.0


@contextmanager
def serve_in_thread(app: ASGIApp) -> Iterator[str]:
    """Serve `app` until the block ends; yields its base URL."""
    sock = loopback_socket()
    port: int = sock.getsockname()[1]
    server = quiet_server(app)
    failures: list[BaseException] = []

    def run() -> None:
        try:
            server.run(sockets=[sock])
        except BaseException as exc:  # surfaced below
            failures.append(exc)

    thread = threading.Thread(target=run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + _DEADLINE_SECONDS
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            thread.join(_DEADLINE_SECONDS)
            sock.close()
            raise RuntimeError(f"the server did not start: {failures!r}")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(_DEADLINE_SECONDS)
        sock.close()
    if failures:
        raise RuntimeError(f"the server failed: {failures!r}")


@dataclass(frozen=True)
class Host:
    """A running wopeval host and its two tenants' keys."""

    base_url: str
    keys: dict[str, str]

    @property
    def key_a(self) -> str:
        return self.keys[TENANT_A]

    @property
    def key_b(self) -> str:
        return self.keys[TENANT_B]

    def settle(self) -> None:
        """Wait until no run of either tenant is active (refused-then-accepted runs run on)."""
        deadline = time.monotonic() + _DEADLINE_SECONDS
        with httpx.Client(base_url=self.base_url, trust_env=False) as http:
            for key in self.keys.values():
                headers = {"Authorization": f"Bearer {key}", "OpenWOP-Version": "2.0"}
                while time.monotonic() < deadline:
                    active = [
                        run
                        for status in ("pending", "running", "cancelling")
                        for run in http.get(
                            "/runs", params={"status": status}, headers=headers
                        ).json()["runs"]
                    ]
                    if not active:
                        break
                    time.sleep(0.05)


@contextmanager
def wopeval_host(data_dir: Path) -> Iterator[Host]:
    keys = {
        TENANT_A: "wop_test_a_" + secrets.token_hex(16),
        TENANT_B: "wop_test_b_" + secrets.token_hex(16),
    }
    settings = Settings(data_dir=data_dir, api_keys=keys)
    with serve_in_thread(host_app(settings)) as base_url:
        yield Host(base_url, keys)
