"""Real `wopeval` processes for the tiers that need them: `serve` started, awaited, stopped or
killed outright, and the environment every child gets."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx

WOPEVAL = str(Path(sys.executable).with_name("wopeval"))
START_DEADLINE_SECONDS = 60.0
STOP_DEADLINE_SECONDS = 30.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def git(cwd: Path, *args: str) -> str:
    """`git ARGS` in `cwd` with a throwaway author, for tests that make repositories."""
    done = subprocess.run(
        ["git", "-c", "user.name=wopeval-tests", "-c", "user.email=tests@example.invalid", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


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
class ServeOptions:
    """The command line of one `wopeval serve`."""

    data_dir: Path
    database_url: str | None
    api_keys: tuple[str, ...] = ()
    """`TENANT=KEY` pairs; none means the generated dev key."""
    project: Path | None = None
    extra: tuple[str, ...] = ()
    """More `wopeval serve` options, as written on its command line."""
    env: tuple[tuple[str, str], ...] = ()
    """Environment variables the process gets besides the test's own."""

    def arguments(self, port: int) -> list[str]:
        command = ["serve", "--port", str(port), "--data-dir", str(self.data_dir)]
        if self.database_url:
            command += ["--database-url", self.database_url]
        for pair in self.api_keys:
            command += ["--api-key", pair]
        if self.project is not None:
            command += ["--project", str(self.project)]
        return command + list(self.extra)

    def resolved_database_url(self) -> str:
        """The URL the host resolves (the SQLite file in the data dir by default)."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'wopeval.db').resolve()}"

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
            env=child_env(dict(options.env)),
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


@dataclass(frozen=True)
class WorkerOptions:
    """The command line of one `wopeval worker` (short intervals for tests by default)."""

    data_dir: Path
    database_url: str
    project: Path | None = None
    concurrency: int = 8
    heartbeat_seconds: float = 0.5
    stall_seconds: float = 2.0
    reconcile_seconds: float = 0.5
    watch_seconds: float = 0.2
    max_stalls: int = 3
    shutdown_grace_seconds: float = 10.0
    env: tuple[tuple[str, str], ...] = ()
    """Environment variables the process gets besides the test's own."""
    extra: tuple[str, ...] = ()
    """Further options, after the ones above."""

    def arguments(self) -> list[str]:
        command = [
            "worker",
            "--database-url",
            self.database_url,
            "--data-dir",
            str(self.data_dir),
            "--port",
            "0",
            "--concurrency",
            str(self.concurrency),
            "--heartbeat-seconds",
            str(self.heartbeat_seconds),
            "--stall-seconds",
            str(self.stall_seconds),
            "--reconcile-seconds",
            str(self.reconcile_seconds),
            "--watch-seconds",
            str(self.watch_seconds),
            "--max-stalls",
            str(self.max_stalls),
            "--shutdown-grace-seconds",
            str(self.shutdown_grace_seconds),
        ]
        if self.project is not None:
            command += ["--project", str(self.project)]
        return [*command, *self.extra]


class WorkerProcess:
    """A real `wopeval worker`: started, awaited (its health endpoint ready), stopped by PID."""

    def __init__(self, options: WorkerOptions, log: Path) -> None:
        self.options = options
        self.log = log
        self._log_file = log.open("w")
        self.process = subprocess.Popen(
            [WOPEVAL, *options.arguments()],
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            env=child_env(dict(options.env)),
        )
        self.health_url: str | None = None
        self.replaced = False
        """A dead worker a test has started another in place of."""

    @property
    def pid(self) -> int:
        return self.process.pid

    def output(self) -> str:
        if not self._log_file.closed:
            self._log_file.flush()
        return self.log.read_text()

    def wait_up(self, *, killed_is_up: bool = False) -> None:
        """Wait until the worker's health endpoint says it is ready; `killed_is_up`: or it
        was killed (SIGKILL) first, as a poison trial it took kills it."""
        deadline = time.monotonic() + START_DEADLINE_SECONDS
        while time.monotonic() < deadline:
            code = self.process.poll()
            if killed_is_up and code == -signal.SIGKILL:
                return
            assert code is None, f"wopeval worker exited {code}: {self.output()}"
            if self.health_url is None:
                for line in self.output().splitlines():
                    if "health on " in line:
                        self.health_url = line.split("health on ", 1)[1].strip()
            if self.health_url is not None and self.health()["ready"]:
                return
            time.sleep(0.1)
        raise AssertionError(f"wopeval worker never became ready: {self.output()}")

    def health(self) -> dict[str, object]:
        assert self.health_url is not None
        try:
            with httpx.Client(trust_env=False, timeout=5.0) as client:
                body: dict[str, object] = client.get(self.health_url).json()
        except httpx.TransportError:
            return {"ready": False}
        # Not ready: the checks ride in the 503 envelope's details.
        details = body.get("details")
        return details if isinstance(details, dict) else body

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        """SIGTERM and wait: running trials finish, the rest goes back to the queue."""
        self._end(signal.SIGTERM)

    def kill(self) -> None:
        self._end(signal.SIGKILL)

    def pause(self) -> None:
        """SIGSTOP: the process stops between two instructions, heartbeats included."""
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.process.send_signal(signal.SIGCONT)

    def _end(self, how: signal.Signals) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.send_signal(how)
        try:
            self.process.wait(STOP_DEADLINE_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(STOP_DEADLINE_SECONDS)
        self._log_file.close()
