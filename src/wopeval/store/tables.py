"""The relational schema. ORM-free Core tables, kept apart from the wire models (G9)."""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    text,
)

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(column_0_label)s",
        "uq": "uq_%(table_name)s_%(column_0_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

api_keys = Table(
    "api_keys",
    metadata,
    Column("key_hash", String(64), primary_key=True),
    Column("key_id", String(32), nullable=False),
    Column("tenant", String(128), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

runs = Table(
    "runs",
    metadata,
    Column("run_id", String(300), primary_key=True),
    Column("tenant", String(128), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("workflow_id", String(128), nullable=False),
    Column("status", String(16), nullable=False),
    Column("owner", JSON, nullable=False),
    Column("request", JSON, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("started_at", DateTime(timezone=True), nullable=True),
    Column("completed_at", DateTime(timezone=True), nullable=True),
    Column("error", JSON, nullable=True),
    Column("outputs", JSON, nullable=True),
    Column("summary", JSON, nullable=True),
    Column("suite_id", String(200), nullable=True),
    Column("agent_ids", JSON, nullable=False),
    Column("last_sequence", Integer, nullable=False),
    Column("parent_run_id", String(300), nullable=True),
    # Set with the accepted cancel (status `cancelling`); `run.cancelled` carries it.
    Column("cancel_reason", Text, nullable=True),
    # Monotonic insertion order; newest-first listing and cursors ride on it.
    Column("created_seq", BigInteger, nullable=False),
    # `sha256:` digest of the project catalog the run was created under
    # (engine/catalog/catalog_digest.py).
    Column("catalog_digest", String(71), nullable=True),
    # Eval trials landed so far, counted under the row lock with each trial's commit.
    Column("landed_trials", Integer, nullable=False, server_default="0"),
    # A completed workflow run's idle agents: `[{agentId, nodeId, reasons}]` (evals/_idle.py).
    Column("idle", JSON, nullable=True),
    Index("ix_runs_tenant_created", "tenant", "created_seq"),
)

# An eval run's plan (its whole suite document among it), apart from the run's row: every
# step a run lands moves that row, and SQLite writes a row whole when it updates it.
run_plans = Table(
    "run_plans",
    metadata,
    Column("run_id", String(300), primary_key=True),
    Column("plan", JSON, nullable=False),
)

INVOCATION_STARTED = text("type = 'agent.invocation-started'")
"""The partial index's condition, written as is (not bound) by the queries that use it: a
database uses a partial index only for a query whose own condition says the same."""

events = Table(
    "events",
    metadata,
    Column("run_id", String(300), primary_key=True),
    Column("sequence", Integer, primary_key=True),
    Column("type", String(64), nullable=False),
    # The serialized RunEventDoc: served byte for byte by poll, SSE and replays.
    Column("doc", Text, nullable=False),
    # A fixture source's invocations (`EventsRepo.invoked_agents_of`), read without
    # scanning its every event: a 10,000-call source logs twice as many tool events.
    Index(
        "ix_events_invocation_started",
        "run_id",
        "sequence",
        sqlite_where=INVOCATION_STARTED,
    ),
)


def declare_postgresql_conditions() -> None:
    """Declare the partial indexes' conditions for PostgreSQL too (`store.db.create_engine`,
    for a PostgreSQL URL). Not in the tables themselves: SQLAlchemy checks a
    `postgresql_where` against that dialect, and importing it is ~50 ms of every SQLite
    command's start (issue 28)."""
    (started,) = (index for index in events.indexes if index.name == "ix_events_invocation_started")
    started.dialect_options["postgresql"]["where"] = INVOCATION_STARTED


tool_calls = Table(
    "tool_calls",
    metadata,
    Column("run_id", String(300), primary_key=True),
    Column("sequence", Integer, primary_key=True),
    Column("invocation_id", String(64), nullable=False),
    Column("agent_id", String(128), nullable=False),
    Column("is_delegate", Boolean, nullable=False),
    Column("tool", String(256), nullable=False),
    Column("call_id", String(64), nullable=False),
    # A live call is recorded `unknown` before its tool runs; its outcome replaces that.
    Column("status", String(16), nullable=False),
    Column("served_by", String(8), nullable=False),
    Column("duration_ms", Integer, nullable=True),
    Column("recorded", Boolean, nullable=False),
    # Content columns: nulled by erasure and retention, which set erased_at.
    Column("inputs", JSON, nullable=True),
    Column("result", JSON, nullable=True),
    Column("error", JSON, nullable=True),
    Column("erased_at", DateTime(timezone=True), nullable=True),
)

invocations = Table(
    "invocations",
    metadata,
    Column("run_id", String(300), primary_key=True),
    Column("invocation_id", String(64), primary_key=True),
    Column("agent_id", String(128), nullable=False),
    Column("is_delegate", Boolean, nullable=False),
    Column("node_id", String(128), nullable=True),
    Column("task_id", String(128), nullable=True),
    Column("trial", Integer, nullable=True),
    Column("outcome", String(16), nullable=False),
    # `{type, message, traceback}` of an exception the agent raised; kept in the host only.
    Column("error", JSON, nullable=True),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("completed_at", DateTime(timezone=True), nullable=False),
    # `sha256:` digest of the tool listing the agent was offered (its MCP `tools/list`).
    Column("tools_digest", String(71), nullable=True),
    # What the agent said (a command agent's stderr): redacted, its last 16 KiB. Content:
    # nulled by erasure (engine/recording/redaction.py, engine/runs/erasure.py).
    Column("stderr", Text, nullable=True),
    # Why a completed invocation recorded nothing a replay could test (evals/_idle.py).
    Column("idle", JSON, nullable=True),
)

model_calls = Table(
    "model_calls",
    metadata,
    # One row per model exchange of an invocation (an LLM lane or the model proxy).
    Column("run_id", String(300), primary_key=True),
    Column("invocation_id", String(64), primary_key=True),
    Column("ordinal", Integer, primary_key=True),
    Column("agent_id", String(128), nullable=False),
    Column("is_delegate", Boolean, nullable=False),
    # The wire API: `chat` (OpenAI Chat Completions), `responses`, `messages` (Anthropic).
    Column("api", String(16), nullable=False, server_default="chat"),
    Column("via", String(8), nullable=False),
    Column("served_by", String(8), nullable=False),
    Column("status", String(8), nullable=False),
    Column("request_hash", String(71), nullable=False),
    Column("model", String(256), nullable=True),
    Column("response_model", String(256), nullable=True),
    Column("stream", Boolean, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("latency_ms", Integer, nullable=False),
    Column("prompt_tokens", Integer, nullable=True),
    Column("completion_tokens", Integer, nullable=True),
    Column("cost_usd", Float, nullable=True),
    Column("at", DateTime(timezone=True), nullable=False),
    Column("recorded", Boolean, nullable=False),
    # Content columns (never the API key): nulled by erasure and retention.
    Column("request", JSON, nullable=True),
    Column("response", JSON, nullable=True),
    Column("error", JSON, nullable=True),
    Column("erased_at", DateTime(timezone=True), nullable=True),
)

# Each MCP server's `tools/list` as a run was offered it (docs/agents.md, "Tool contracts"):
# the listing stored once per tenant and digest, and which runs were offered it, by server.
tool_listings = Table(
    "tool_listings",
    metadata,
    Column("tenant", String(128), primary_key=True),
    Column("digest", String(71), primary_key=True),
    Column("listing", JSON, nullable=False),
)

run_tool_listings = Table(
    "run_tool_listings",
    metadata,
    Column("run_id", String(300), primary_key=True),
    Column("server", String(128), primary_key=True),
    Column("digest", String(71), nullable=False),
    Index("ix_run_tool_listings_digest", "digest"),
)

task_trials = Table(
    "task_trials",
    metadata,
    Column("run_id", String(300), primary_key=True),
    Column("task_id", String(128), primary_key=True),
    Column("trial", Integer, primary_key=True),
    Column("passed", Boolean, nullable=False),
    # The agent's `wireContent` when the trial ran: what of the detail may leave the host.
    Column("wire_content", String(8), nullable=False),
    # The whole trial as the host saw it; shown through `engine/recording/content.py` only.
    Column("detail", JSON, nullable=False),
    Column("erased_at", DateTime(timezone=True), nullable=True),
    # The trial's outcome in counts, for the summary built from stored trials (queue mode).
    Column("latency_ms", Integer, nullable=True),
    Column("fixture_misses", Integer, nullable=True),
)

derived_fixtures = Table(
    "derived_fixtures",
    metadata,
    Column("eval_run_id", String(300), primary_key=True),
    Column("task_id", String(128), primary_key=True),
    Column("source_run_id", String(300), nullable=False),
    Column("entries", JSON, nullable=True),
    # Recorded model answers for model replay (`model_replay = "recorded"`); null otherwise.
    Column("model_entries", JSON, nullable=True),
    Column("erased_at", DateTime(timezone=True), nullable=True),
    Index("ix_derived_fixtures_source", "source_run_id"),
)

# RFC 0056 annotations: a side resource of a run, never one of its events. `doc` is the
# annotation as the wire shows it; `kind` and `label` are kept apart for the label reads
# calibration makes (engine/runs/feedback.py `task_labels`).
run_annotations = Table(
    "annotations",
    metadata,
    Column("run_id", String(300), primary_key=True),
    Column("annotation_id", String(64), primary_key=True),
    Column("tenant", String(128), nullable=False),
    Column("node_id", String(128), nullable=True),
    Column("kind", String(16), nullable=False),
    Column("label", String(256), nullable=True),
    Column("doc", JSON, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Index("ix_annotations_tenant_kind_created", "tenant", "kind", "created_at"),
)

# A judge's calibrations (docs/graders.md, "Calibration"): one row per `judges calibrate`,
# tied to the judge's digest at the time; the gate reads the newest for the current digest.
judge_calibrations = Table(
    "judge_calibrations",
    metadata,
    Column("calibration_id", String(64), primary_key=True),
    Column("tenant", String(128), nullable=False),
    Column("judge_id", String(128), nullable=False),
    Column("digest", String(80), nullable=False),
    Column("labels", Integer, nullable=False),
    Column("kappa", Float, nullable=True),
    Column("report", JSON, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Index("ix_judge_calibrations_latest", "tenant", "judge_id", "digest", "created_at"),
)

suites = Table(
    "suites",
    metadata,
    Column("tenant", String(128), primary_key=True),
    Column("suite_id", String(200), primary_key=True),
    Column("version", String(64), primary_key=True),
    Column("document", JSON, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

counters = Table(
    "counters",
    metadata,
    Column("tenant", String(128), primary_key=True),
    Column("key", String(256), primary_key=True),
    Column("count", BigInteger, nullable=False),
)

idempotency = Table(
    "idempotency",
    metadata,
    Column("tenant", String(128), primary_key=True),
    Column("endpoint", String(128), primary_key=True),
    Column("key", String(128), primary_key=True),
    Column("digest", String(64), nullable=False),
    Column("status_code", Integer, nullable=True),
    Column("body", Text, nullable=True),
    Column("headers", JSON, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
)
