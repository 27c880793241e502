"""Names vulture cannot see being used (`make lint`; settings in pyproject.toml [tool.vulture]).

Vulture reads Python only and matches names, not objects: each line here is a use of
a name that something other than Python code reads (pydantic, a Jinja template, a
framework calling a hook, a project file naming a callable). A line covers every
definition of that name, so keep each to a name that is really used that way. Names
whole families share (routes, commands, fixtures, validators, migration revisions)
are left to `ignore_decorators` and `ignore_names` there.
"""

from vulture.whitelist_utils import Whitelist

_ = Whitelist()

# Wire model fields: read and written by pydantic (request bodies, events, task
# details, the manifest), never by attribute in our code.
_.ai
_.allowedModels
_.budget
_.callbackUrl
_.callId
_.causationId
_.completionTokens
_.credentialRef
_.criterion
_.distillation
_.eachSide
_.escalationThreshold
_.exportedAt
_.extensions
_.interruptedNodeId
_.maxLoopIterations
_.maxRefusals
_.maxTokens
_.memorySeed
_.mockProvider
_.nodeType
_.parentRunId
_.promptOverrides
_.promptTokens
_.reasoningVerbosity
_.recursionLimit
_.regressionVsBaseline
_.requestHash
_.residency
_.responseModel
_.runTimeoutMs
_.scopeId
_.startedAt
_.subjectId
_.tokenBudget
_.toolName
_.weight
_.x_fixture_miss_count
_.x_passed_trials
_.x_trials
# RunKind member: parsed from stored rows and accepted as a `kind` listing filter.
_.FORK

# Dashboard view fields read only by the Jinja templates (src/wopeval/api/ui/templates/).
_.baseline_trials
_.baseline_version
_.calls_window
_.candidate_only
_.candidate_score
_.candidate_trials
_.candidate_version
_.earlier_href
_.exchange_index
_.first_href
_.later_href
_.more_href
_.more_trials
_.show_hrefs
_.shows
_.timeline_window

# InvocationRow field: written to invocations.tools_digest as the row's dict.
_.tools_digest

# Hooks a framework calls: SQLAlchemy's dialect registry (store/db.py registers the class
# by name) and its dialect API; Procrastinate's retry strategy and worker signal handling;
# uvicorn's main loop (hosting/loopback.py's LoopbackServer).
_.InlineSQLiteDialect
_.import_dbapi
_.supports_statement_cache
_.get_retry_decision
_.capture_signals
_.main_loop

# Tool callables named by a project file (`callable = "module:function"` in wopeval.toml).
_.kb_lookup
_.markup
_.python_lookup
# A TypedDict key and a pydantic field of tool arguments, read from the schema they make.
_.amount

# `__exit__` protocol arguments.
_.exc_type
_.tb
# Fixtures requested for their side effect (a PATH entry, built framework virtualenvs).
_.on_path
_.framework_venvs

# CLI commands registered by "module:attribute" in cli/main.py's COMMANDS, imported
# when they run.
_.compare
_.conformance
_.explain
_.init

# The SDK's stdio spawn, replaced by the host's (tools/_mcp_client.py) and called by the SDK.
_._create_platform_compatible_process

# The upstream sockets' protocol and backend (api/upstream_streams.py), called by asyncio's
# transports and by httpcore's connections.
_.connection_made
_.data_received
_.eof_received
_.connection_lost
_.pause_writing
_.resume_writing
_.connect_tcp
_.connect_unix_socket
