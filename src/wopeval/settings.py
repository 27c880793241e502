"""Host settings, built at the edge (CLI or test) and passed down explicitly (G14)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from wopeval.wire import limits
from wopeval.wire.eval_options import EvalMode, ToolsChangedPolicy

_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


class EvalFeatures(BaseSettings):
    """Every advertised eval member can be switched off; the host then behaves as one without it."""

    model_config = SettingsConfigDict(env_prefix="WOPEVAL_EVAL_", extra="forbid")

    enabled: bool = True
    modes: tuple[EvalMode, ...] = ("golden", "rubric", "regression", "live-shadow")
    max_tasks_per_suite: int = Field(default=1000, ge=1)
    fixture_matching: bool = True
    fixture_errors: bool = True
    regression_verdict: bool = True
    baseline_selection: bool = True
    recorded_fixtures: bool = True
    model_replay: bool = False
    """Host extension beyond RFC 0252 UQ 5: every agent replays its recorded model answers
    in an eval task that takes its fixtures from a source run (`wopeval eval --replay-model`;
    per agent: `model_replay = "recorded"`)."""
    tools_changed: ToolsChangedPolicy = "report"
    """`WOPEVAL_EVAL_TOOLS_CHANGED`: see `ToolsChangedPolicy`."""
    concurrency: int = Field(default=32, ge=1, le=1024)
    alpha: float = Field(default=0.05, gt=0, lt=1)


class QueueSettings(BaseSettings):
    """Queue mode (PostgreSQL): how API processes enqueue and workers execute (docs/deploy.md)."""

    model_config = SettingsConfigDict(env_prefix="WOPEVAL_QUEUE_", extra="forbid")

    chunk_size: int = Field(default=32, ge=1, le=10_000)
    """`(task, trial)` pairs per eval job (set on the API processes, which enqueue)."""
    concurrency: int = Field(default=16, ge=1, le=1024)
    """Trials (and jobs) a worker runs at once."""
    heartbeat_seconds: float = Field(default=10.0, gt=0)
    """How often a worker tells the queue it is alive."""
    stall_seconds: float = Field(default=30.0, gt=0)
    """A worker silent this long is taken for dead: its jobs run again elsewhere."""
    reconcile_seconds: float = Field(default=10.0, gt=0)
    """How often a worker looks for stalled jobs and for running runs that have no job."""
    watch_seconds: float = Field(default=1.0, gt=0)
    """How often a worker reads the state (paused, cancelled) of the runs it executes."""
    max_stalls: int = Field(default=3, ge=1, le=100)
    """A job that stalls this many times (a trial that kills its worker) fails its run
    with `worker_lost`."""
    shutdown_grace_seconds: float = Field(default=60.0, ge=0)
    """On SIGTERM, how long a worker lets its running trials finish before it hands
    their chunks back to the queue."""


class DashboardSettings(BaseSettings):
    """The dashboard's sessions and sign-in throttle (docs/dashboard.md, "Signing in")."""

    model_config = SettingsConfigDict(env_prefix="WOPEVAL_DASHBOARD_", extra="forbid")

    session_seconds: float = Field(default=12 * 3600, gt=0)
    """A session ends this long after sign-in, used or not."""
    sessions_per_tenant: int = Field(default=1000, ge=1)
    """Beyond this, the tenant's own oldest session ends: one tenant never ends another's."""
    sign_in_window_seconds: float = Field(default=60.0, gt=0)
    """The sliding window both sign-in limits count in."""
    failed_sign_ins_per_address: int = Field(default=10, ge=1)
    """Wrong keys one client address may present per window; then it is refused (429)."""
    sign_ins_per_tenant: int = Field(default=60, ge=1)
    """Sessions one tenant may open per window; then its sign-ins are refused (429)."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="WOPEVAL_", extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(default=8737, ge=0, le=65535)
    data_dir: Path = Path(".wopeval")
    database_url: str | None = None
    api_keys: Annotated[dict[str, str], NoDecode] = Field(default_factory=dict)
    """tenant → key; `WOPEVAL_API_KEYS=acme=k1,beta=k2`."""
    project: Path | None = None
    replay: bool = True
    run_list: bool = True
    run_diff: bool = True
    """`GET /runs/{runId}:diff` (runs.md `diffRun`, OPTIONAL); off, it answers 404."""
    feedback: bool = True
    """RFC 0056 run annotations (`POST`/`GET /runs/{runId}/annotations`, the `feedback`
    family); off, both answer 404 and discovery leaves the family out."""
    retention_days: int | None = Field(default=None, ge=1)
    purge_interval_seconds: float = Field(default=3600.0, gt=0)
    lease_check_seconds: float = Field(default=5.0, gt=0)
    """How often a host checks that it still holds its database's lease (store/lease.py)."""
    tool_timeout_seconds: float = Field(default=30.0, gt=0)
    live_tools: bool = True
    """False: an offline host; no tool runs live, a call no fixture answers fails closed
    (`live_tools_disabled`), and MCP servers are not connected."""
    max_body_bytes: int = Field(default=limits.DEFAULT_MAX_BODY_BYTES, ge=1)
    """A larger request body is refused with 413 before it is read or parsed."""
    public_url: str | None = None
    """Where agent processes and services reach this host (their MCP endpoints); by
    default `http://HOST:PORT`, with a wildcard HOST read as loopback."""
    eval: EvalFeatures = Field(default_factory=EvalFeatures)
    queue: QueueSettings = Field(default_factory=QueueSettings)
    dashboard: DashboardSettings = Field(default_factory=DashboardSettings)

    @field_validator("database_url")
    @classmethod
    def _check_database_url(cls, value: str | None) -> str | None:
        if value is not None:
            check_database_url(value)
        return value

    @field_validator("api_keys", mode="before")
    @classmethod
    def _parse_keys(cls, value: object) -> object:
        if isinstance(value, str):
            return parse_api_keys(value.split(",") if value else [])
        return value

    @model_validator(mode="after")
    def _refuse_unsafe_defaults(self) -> Settings:
        # The generated dev key is a convenience for one machine, never for a network.
        if not self.api_keys and self.host not in _LOOPBACK:
            raise ValueError(
                f"binding {self.host} needs explicit API keys (--api-key TENANT=KEY); "
                "the generated dev key is for loopback only"
            )
        return self

    def agent_base_url(self) -> str:
        if self.public_url:
            return self.public_url
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}"

    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.default_database()}"

    def default_database(self) -> Path:
        """The SQLite file used when no `database_url` is given, in the data directory."""
        return (self.data_dir / "wopeval.db").resolve()


_POSTGRESQL_DRIVERS = frozenset({"", "psycopg", "psycopg_async"})


def check_database_url(database_url: str) -> None:
    """Refuse, by a message that says what to give instead, a database URL no store can
    open: one that does not parse, another database than SQLite or PostgreSQL, PostgreSQL
    through another driver than psycopg, an in-memory SQLite database (a host's runs
    must outlive it), a `prepare_threshold` (store/db.py) that is neither a whole number
    nor `none`. The URL itself is never repeated: it may hold a password."""
    # SQLAlchemy's own parser, loaded only when a URL is given (the store loads it anyway).
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(database_url)
    except ArgumentError:
        raise ValueError(
            "the database URL cannot be parsed: give sqlite:///PATH or "
            "postgresql+psycopg://USER@HOST:PORT/DATABASE"
        ) from None
    backend, driver = url.get_backend_name(), url.get_driver_name()
    if backend == "sqlite":
        if not url.database or url.database == ":memory:":
            raise ValueError("a host needs a SQLite database file (sqlite:///PATH)")
    elif backend != "postgresql":
        raise ValueError(
            f"wopeval stores runs in SQLite or PostgreSQL, not {backend!r}: give "
            "sqlite:///PATH or postgresql+psycopg://…"
        )
    elif url.drivername.partition("+")[2] not in _POSTGRESQL_DRIVERS:
        raise ValueError(
            f"wopeval reaches PostgreSQL through psycopg, not {driver!r}: give "
            "postgresql+psycopg://…"
        )
    threshold = url.query.get("prepare_threshold")
    if threshold is not None and (
        not isinstance(threshold, str) or not (threshold.isdigit() or threshold.lower() == "none")
    ):
        raise ValueError("the database URL's prepare_threshold is a whole number or 'none'")


def parse_api_keys(pairs: list[str]) -> dict[str, str]:
    """`TENANT=KEY` pairs → mapping; refuses a malformed pair rather than guessing."""
    keys: dict[str, str] = {}
    for pair in pairs:
        tenant, sep, key = pair.strip().partition("=")
        if not sep or not tenant or not key:
            raise ValueError(f"API key must be TENANT=KEY, got {pair.strip()!r}")
        if key in keys.values():
            raise ValueError(f"The same key is given for two tenants ({tenant!r})")
        keys[tenant] = key
    return keys
