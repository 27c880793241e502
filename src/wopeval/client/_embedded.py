"""The embedded host: the real app under uvicorn in a thread, on an ephemeral loopback port.

Commands without `--url` start one over the same data directory and project
`wopeval serve` would use, then speak to it over HTTP exactly as they would to
a remote host: one code path, so embedded runs prove nothing a remote one would
not. It owns the database while it runs, as any host does. When a live
`wopeval serve` owns it instead, the command talks to that host (found through
the data directory) and starts nothing. The embedded host never writes a key:
the command presents its own session key, held in memory only.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from wopeval.client._wire import ClientError, WireClient
from wopeval.hosting.collector import paused_for_startup
from wopeval.hosting.discovery import DEV_KEY_FILE, DEV_TENANT, Owner, serving_owner
from wopeval.settings import Settings

if TYPE_CHECKING:
    # The server stack is loaded by `start`: a `--url` command runs no host.
    from wopeval.hosting.loopback import LoopbackServer
    from wopeval.hosting.ownership import Lease
    from wopeval.wire.eval_options import ToolsChangedPolicy

log = logging.getLogger("wopeval.embedded")
START_DEADLINE_SECONDS = 60.0
START_POLL_SECONDS = 0.05
"""How often a start still waiting looks whether its thread died (it wakes at once when ready)."""
STOP_DEADLINE_SECONDS = 30.0


class DatabaseInUse(ClientError):
    """Another live process owns the database an embedded host would use; nothing started."""

    def __init__(self, owner: Owner) -> None:
        super().__init__(f"{owner}; stop it first, or pass the --url of a host serving it")
        self.owner = owner


class EmbeddedHost:
    """One in-process host; `start()` then `stop()`, or use it as a context manager.

    `start()` raises `DatabaseInUse`, having touched nothing, when another live
    process owns the database.
    """

    def __init__(self, settings: Settings, *, leave_dev_key: bool = False) -> None:
        self.settings = settings
        self.leave_dev_key = leave_dev_key
        """Also write the `dev` tenant's key as `serve` would (`wopeval demo`: the key the
        dashboard's docs name is there before any `serve` or `ui` has run)."""
        self.session_key = "wop_session_" + secrets.token_urlsafe(32)
        self._lease: Lease | None = None
        self._server: LoopbackServer | None = None
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
        with paused_for_startup():
            # Imported here, not at the top: the server stack (FastAPI, SQLAlchemy, Alembic)
            # costs seconds of start-up that `--url` commands never need.
            from wopeval.hosting.ownership import DatabaseOwned, DatabaseUnreachable, claim

            try:
                lease = claim(self.settings)
            except DatabaseOwned as owned:
                raise DatabaseInUse(owned.owner) from None
            except DatabaseUnreachable as unreachable:
                raise ClientError(f"the embedded host did not start: {unreachable}") from None
            try:
                self._start(lease)
            except BaseException:
                lease.release()
                raise
        self._lease = lease
        log.info("embedded host ready at %s", self.base_url)

    def _start(self, lease: Lease) -> None:
        from wopeval.hosting.app import host_app
        from wopeval.hosting.host import Embedded
        from wopeval.hosting.loopback import loopback_socket, quiet_server

        sock = loopback_socket()
        settings = self.settings
        if settings.public_url is None:
            # The kernel picked the port: agent processes reach their MCP endpoints there.
            public_url = f"http://127.0.0.1:{sock.getsockname()[1]}"
            settings = settings.model_copy(update={"public_url": public_url})
        app = host_app(settings, role=Embedded(self.session_key, self.leave_dev_key), lease=lease)
        server = quiet_server(app)
        failures = self._failures
        captured = _StartupLog()
        startup_log = logging.getLogger("uvicorn.error")
        startup_log.addHandler(captured)
        # uvicorn logs a failed start (a bad project, say) instead of raising it: keep the
        # message for our own error, and off the user's terminal (it would print twice).
        startup_log.propagate = False

        def serve() -> None:
            try:
                server.run(sockets=[sock])
            except BaseException as exc:  # re-raised by start() / stop() below
                failures.append(exc)

        thread = threading.Thread(target=serve, name="wopeval-embedded", daemon=True)
        thread.start()
        deadline = time.monotonic() + START_DEADLINE_SECONDS
        while not server.ready.wait(START_POLL_SECONDS):
            if not thread.is_alive() or time.monotonic() > deadline:
                server.exit()
                thread.join(STOP_DEADLINE_SECONDS)
                sock.close()
                startup_log.removeHandler(captured)
                reason = captured.reason() or _describe(failures)
                raise ClientError(f"the embedded host did not start: {reason}")
        startup_log.removeHandler(captured)
        self._server, self._thread, self._socket = server, thread, sock

    def stop(self) -> None:
        server, thread, sock = self._server, self._thread, self._socket
        self._server = self._thread = self._socket = None
        if server is None or thread is None or sock is None:
            return
        server.exit()
        thread.join(STOP_DEADLINE_SECONDS)
        sock.close()
        if thread.is_alive():
            # Still running: the lease stays held until this process exits.
            raise ClientError("the embedded host did not stop in time")
        lease, self._lease = self._lease, None
        if lease is not None:
            lease.release()

    def client(self, api_key: str | None = None) -> WireClient:
        """A client presenting `api_key`, or this command's session key (tenant `dev`)."""
        return WireClient(self.base_url, api_key or self.session_key, trust_env=False)


class _StartupLog(logging.Handler):
    """Keeps uvicorn's error records while the host starts."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())

    def reason(self) -> str | None:
        """The first error logged: an expected failure's whole message (the app reports it
        so, `api/startup.py`), or the traceback of an unexpected one."""
        return self.messages[0].strip() if self.messages else None


def _describe(failures: list[BaseException]) -> str:
    if not failures:
        return "it did not come up in time"
    cause = failures[-1]
    # uvicorn turns a failed lifespan into SystemExit; the logged cause is the useful part.
    return str(cause) or type(cause).__name__


def embedded_settings(
    *,
    data_dir: Path,
    project: Path | None,
    database_url: str | None,
    replay_model: bool = False,
    offline: bool = False,
    tools_changed: ToolsChangedPolicy = "report",
) -> Settings:
    """The settings `wopeval serve` would build from the same options (G14: built here);
    `replay_model` makes every agent replay recorded model answers (`--replay-model`),
    `offline` runs no tool live (`--offline`), `tools_changed` says what a task whose MCP
    tools changed comes to (`--tools-changed`)."""
    # The embedded host binds loopback itself, whatever WOPEVAL_HOST says.
    overrides: dict[str, object] = {"data_dir": data_dir, "host": "127.0.0.1", "port": 0}
    if project is not None:
        overrides["project"] = project
    if offline:
        overrides["live_tools"] = False
    if database_url:
        overrides["database_url"] = database_url
    try:
        settings = Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
        raise ClientError(f"invalid host settings: {problems}") from None
    if replay_model or tools_changed != "report":
        features = settings.eval.model_copy(
            update={"model_replay": replay_model, "tools_changed": tools_changed}
        )
        settings = settings.model_copy(update={"eval": features})
    return settings


def configured_key(settings: Settings, api_key: str | None) -> str | None:
    """The key a command was given (`--api-key`) or configured with (`WOPEVAL_API_KEYS`:
    dev's, or the only one); None when it has neither."""
    if api_key:
        return api_key
    if not settings.api_keys:
        return None
    if DEV_TENANT in settings.api_keys:
        return settings.api_keys[DEV_TENANT]
    if len(settings.api_keys) == 1:
        return next(iter(settings.api_keys.values()))
    raise ClientError("several API keys are configured; choose one with --api-key")


@contextlib.contextmanager
def embedded_client(
    settings: Settings,
    api_key: str | None,
    *,
    notify: Callable[[str], None] = lambda _: None,
    reads_only: bool = False,
) -> Iterator[WireClient]:
    """A client on the host that owns this data directory's database for the block.

    A live `wopeval serve` owns it: the client talks to that host (`notify` says so)
    and nothing is started. Nobody does: a host is started here and stopped after.
    `reads_only`: the command runs nothing, so its live tools being off (`settings`) is
    no setting a live owner would have to share.
    A serve that owns the default SQLite file is found before the lease is tried, from
    its announcement and the held lock (`discovery`), so that case loads no store.
    """
    host = EmbeddedHost(settings)
    owner = (
        None
        if settings.database_url
        else serving_owner(settings.data_dir, settings.default_database())
    )
    if owner is None:
        try:
            host.start()
        except DatabaseInUse as in_use:
            owner = in_use.owner
    if owner is not None:
        if not settings.live_tools and not reads_only:
            raise ClientError(
                f"{owner}: --offline runs its own embedded host with live tools disabled, "
                "which cannot start while that host owns the database; stop it, or use "
                "another --data-dir"
            )
        if settings.eval.model_replay:
            raise ClientError(
                f"{owner}: --replay-model configures the embedded host, which cannot start; "
                'set model_replay = "recorded" on the agent, or WOPEVAL_EVAL_MODEL_REPLAY=true '
                "for that host"
            )
        if settings.eval.tools_changed == "fail":
            raise ClientError(
                f"{owner}: --tools-changed fail configures the embedded host, which cannot "
                "start; set WOPEVAL_EVAL_TOOLS_CHANGED=fail for that host"
            )
        with _owner_client(settings, api_key, owner, notify) as client:
            yield client
        return
    try:
        with host.client(configured_key(settings, api_key)) as client:
            yield client
    finally:
        host.stop()


def _owner_client(
    settings: Settings, api_key: str | None, owner: Owner, notify: Callable[[str], None]
) -> WireClient:
    """A client on the live host that owns the database, with the key the command has."""
    if owner.url is None:
        raise ClientError(
            f"{owner}: let it finish or stop it, or pass the --url and --api-key of the host "
            "that owns it"
        )
    key = configured_key(settings, api_key) or _read_key(settings.data_dir / DEV_KEY_FILE)
    if key is None:
        raise ClientError(
            f"{owner}, and this command has no API key for it: "
            f"pass --url {owner.url} --api-key KEY (or --api-key KEY alone)"
        )
    notify(f"wopeval: using the host that owns {settings.data_dir}: {owner.url} (pid {owner.pid})")
    return WireClient(owner.url, key, trust_env=False)


def _read_key(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except FileNotFoundError:
        return None
