"""A real `wopeval serve` subprocess: started, awaited, stopped, or killed outright.

`GATE_PROJECT`'s workflow keeps a run active until the test releases it, so a
test can hold a live host with an active run while it starts other processes.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from openwop_client.wire_id import project_id

from ._support import WOPEVAL, child_env, free_port

GATE_PROJECT = Path(__file__).parent / "gate_project"
GATE_WORKFLOW = "cli-gate"
START_DEADLINE_SECONDS = 60.0
STOP_DEADLINE_SECONDS = 30.0


@dataclass(frozen=True)
class ServeOptions:
    """The command line of one `wopeval serve`."""

    data_dir: Path
    database_url: str | None
    api_keys: tuple[str, ...] = ()
    """`TENANT=KEY` pairs; none means the generated dev key."""
    project: Path | None = None

    def arguments(self, port: int) -> list[str]:
        command = ["serve", "--port", str(port), "--data-dir", str(self.data_dir)]
        if self.database_url:
            command += ["--database-url", self.database_url]
        for pair in self.api_keys:
            command += ["--api-key", pair]
        if self.project is not None:
            command += ["--project", str(self.project)]
        return command

    def resolved_database_url(self) -> str:
        """The URL the host resolves (the SQLite file in the data dir by default)."""
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'wopeval.db').resolve()}"

    def embedded(self) -> list[str]:
        """The options that put an embedded CLI command on this host's data and database."""
        options = ["--data-dir", str(self.data_dir)]
        return options + (["--database-url", self.database_url] if self.database_url else [])


class ServeProcess:
    def __init__(self, options: ServeOptions, log: Path, *, umask: int = -1) -> None:
        self.options = options
        self.port = free_port()
        self.log = log
        self._log_file = log.open("w")
        self.process = subprocess.Popen(
            [WOPEVAL, *options.arguments(self.port)],
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            env=child_env(),
            umask=umask,
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.process.pid

    def output(self) -> str:
        if not self._log_file.closed:
            self._log_file.flush()
        return self.log.read_text()

    def http(self, api_key: str) -> httpx.Client:
        return httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {api_key}", "OpenWOP-Version": "2.0"},
            trust_env=False,
            timeout=60.0,
        )

    def outcome(self) -> int | None:
        """Wait until the host answers (None) or the process exits (its exit code)."""
        deadline = time.monotonic() + START_DEADLINE_SECONDS
        while time.monotonic() < deadline:
            code = self.process.poll()
            if code is not None:
                self._log_file.close()
                return code
            try:
                with httpx.Client(base_url=self.url, trust_env=False, timeout=5.0) as client:
                    if client.get("/.well-known/openwop").status_code == 200:
                        return None
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"wopeval serve neither answered nor exited: {self.output()}")

    def wait_up(self) -> None:
        code = self.outcome()
        assert code is None, f"wopeval serve exited {code}: {self.output()}"

    def stop(self) -> None:
        """SIGTERM and wait: the host's graceful shutdown."""
        self._end(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL: the process dies between any two instructions, as in a crash."""
        self._end(signal.SIGKILL)

    def _end(self, how: signal.Signals) -> None:
        if self.process.poll() is None:
            self.process.send_signal(how)
        try:
            self.process.wait(STOP_DEADLINE_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(STOP_DEADLINE_SECONDS)
        self._log_file.close()


@dataclass
class GatedRun:
    """A run of `GATE_WORKFLOW`: active from `entered` until `release()`."""

    run_id: str
    entered: Path
    gate: Path

    @classmethod
    def start(cls, http: httpx.Client, directory: Path) -> GatedRun:
        entered, gate = directory / "entered", directory / "gate"
        body = {"workflowId": GATE_WORKFLOW, "inputs": {"entered": str(entered), "gate": str(gate)}}
        response = http.post("/runs", json=body)
        assert response.status_code == 201, response.text
        run = cls(response.json()["runId"], entered, gate)
        deadline = time.monotonic() + START_DEADLINE_SECONDS
        while not entered.exists():
            assert time.monotonic() < deadline, "the gate agent never started"
            time.sleep(0.02)
        return run

    def release(self) -> None:
        self.gate.touch()

    def status(self, http: httpx.Client) -> str:
        return str(self.snapshot(http)["status"])

    def snapshot(self, http: httpx.Client) -> dict[str, Any]:
        response = http.get(f"/runs/{project_id(self.run_id)}")
        assert response.status_code == 200, response.text
        document: dict[str, Any] = response.json()
        return document

    def wait_terminal(self, http: httpx.Client) -> dict[str, Any]:
        deadline = time.monotonic() + START_DEADLINE_SECONDS
        while True:
            snapshot = self.snapshot(http)
            if snapshot["status"] not in ("pending", "running"):
                return snapshot
            assert time.monotonic() < deadline, f"run {self.run_id} never ended: {snapshot}"
            time.sleep(0.05)


def announcement(data_dir: Path) -> dict[str, Any] | None:
    path = data_dir / "serve.json"
    if not path.exists():
        return None
    document: dict[str, Any] = json.loads(path.read_text())
    return document
