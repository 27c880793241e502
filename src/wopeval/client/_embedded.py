"""The embedded host: the real app under uvicorn in a thread, on an ephemeral loopback port.

Commands without `--url` start one over the same data directory and project
`wopeval serve` would use, then speak to it over HTTP exactly as they would to
a remote host: one code path, so embedded runs prove nothing a remote one would
not. Stop `wopeval serve` on that data directory first; a host starting on a
store fails the runs it finds active (they cannot belong to anyone alive).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import uvicorn
from pydantic import ValidationError

from wopeval.client._wire import ClientError, WireClient
from wopeval.settings import Settings

START_DEADLINE_SECONDS = 60.0
STOP_DEADLINE_SECONDS = 30.0


class EmbeddedHost:
    """One in-process host; `start()` then `stop()`, or use it as a context manager."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self._failures: list[BaseException] = []

    @property
    def base_url(self) -> str:
        if self._socket is None:
            raise RuntimeError("the embedded host is not running")
        port = self._socket.getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __enter__(self) -> EmbeddedHost:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        # Imported here, not at the top: the server stack (FastAPI, SQLAlchemy, Alembic)
        # costs seconds of start-up that `--url` commands never need.
        from wopeval.api.app import create_app
        from wopeval.api.loopback import loopback_socket, quiet_server

        sock = loopback_socket()
        settings = self.settings
        if settings.public_url is None:
            # The kernel picked the port: agent processes reach their MCP endpoints there.
            public_url = f"http://127.0.0.1:{sock.getsockname()[1]}"
            settings = settings.model_copy(update={"public_url": public_url})
        server = quiet_server(create_app(settings))
        failures = self._failures
        captured = _StartupLog()
        startup_log = logging.getLogger("uvicorn.error")
        startup_log.addHandler(captured)
        # uvicorn logs a failed start (a bad project, say) instead of raising it: keep the
        # message for our own error and keep the traceback off the user's terminal.
        startup_log.propagate = False

        def serve() -> None:
            try:
                server.run(sockets=[sock])
            except BaseException as exc:  # re-raised by start() / stop() below
                failures.append(exc)

        thread = threading.Thread(target=serve, name="wopeval-embedded", daemon=True)
        thread.start()
        deadline = time.monotonic() + START_DEADLINE_SECONDS
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                server.should_exit = True
                thread.join(STOP_DEADLINE_SECONDS)
                sock.close()
                startup_log.removeHandler(captured)
                reason = captured.reason() or _describe(failures)
                raise ClientError(f"the embedded host did not start: {reason}")
            time.sleep(0.01)
        startup_log.removeHandler(captured)
        self._server, self._thread, self._socket = server, thread, sock

    def stop(self) -> None:
        server, thread, sock = self._server, self._thread, self._socket
        self._server = self._thread = self._socket = None
        if server is None or thread is None or sock is None:
            return
        server.should_exit = True
        thread.join(STOP_DEADLINE_SECONDS)
        sock.close()
        if thread.is_alive():
            raise ClientError("the embedded host did not stop in time")

    def client(self, api_key: str) -> WireClient:
        return WireClient(self.base_url, api_key, trust_env=False)


class _StartupLog(logging.Handler):
    """Keeps uvicorn's error records while the host starts."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())

    def reason(self) -> str | None:
        """The last line of the first logged traceback: the exception and its message."""
        for message in self.messages:
            lines = [line.strip() for line in message.splitlines() if line.strip()]
            if len(lines) > 1:
                return lines[-1]
        return None


def _describe(failures: list[BaseException]) -> str:
    if not failures:
        return "it did not come up in time"
    cause = failures[-1]
    # uvicorn turns a failed lifespan into SystemExit; the logged cause is the useful part.
    return str(cause) or type(cause).__name__


def embedded_settings(
    *, data_dir: Path, project: Path | None, database_url: str | None
) -> Settings:
    """The settings `wopeval serve` would build from the same options (G14: built here)."""
    # The embedded host binds loopback itself, whatever WOPEVAL_HOST says.
    overrides: dict[str, object] = {"data_dir": data_dir, "host": "127.0.0.1", "port": 0}
    if project is not None:
        overrides["project"] = project
    if database_url:
        overrides["database_url"] = database_url
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
        raise ClientError(f"invalid host settings: {problems}") from None


def embedded_key(settings: Settings, api_key: str | None) -> str:
    """Which key the CLI presents to its own host: the given one, a configured one, or dev's."""
    if api_key:
        return api_key
    from wopeval.api.host import DEV_TENANT  # lazy, as in `EmbeddedHost.start`

    if settings.api_keys:
        if DEV_TENANT in settings.api_keys:
            return settings.api_keys[DEV_TENANT]
        if len(settings.api_keys) == 1:
            return next(iter(settings.api_keys.values()))
        raise ClientError("several API keys are configured; choose one with --api-key")
    path = settings.data_dir / "dev-api-key"
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise ClientError(f"{path} is missing; pass the dev tenant's key with --api-key") from None


@contextlib.contextmanager
def embedded_client(settings: Settings, api_key: str | None) -> Iterator[WireClient]:
    """Start a host on these settings and yield a client on it; stop the host afterwards."""
    with EmbeddedHost(settings) as host, host.client(embedded_key(settings, api_key)) as client:
        yield client
