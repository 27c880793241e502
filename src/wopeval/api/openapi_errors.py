"""`/openapi.json` with the refusals each operation really sends, all in the one envelope schema.

FastAPI documents a 422 `HTTPValidationError` that this host never sends (a
validation failure is `400 validation_error`); it is replaced here by the
statuses each route can answer. Most follow from the route's shape (every
route takes the version header and a query string, an authenticated route can
answer 401, a `{runId}` route 403 and 404, a route with a body 413); the rest
are listed per operation below. A method a path does not serve is answered
`405` with `Allow`, which OpenAPI cannot attach to an operation, so it is
stated in the document's description.

Path and query parameters carry the grammar their routes enforce (`_PARAMETER_SCHEMAS`),
so a value the document calls valid is never refused for its shape.
"""

from __future__ import annotations

from http import HTTPStatus

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from wopeval import evals
from wopeval.api._sse import STREAM_MODES
from wopeval.wire import ids, limits
from wopeval.wire.json_text import JsonObject

_ENVELOPE = "ErrorEnvelope"
_ENVELOPE_SCHEMA: JsonObject = {
    "title": _ENVELOPE,
    "description": "The OpenWOP error envelope (errors.md): a registered or `<org>.` vendor code.",
    "type": "object",
    "additionalProperties": False,
    "required": ["error", "message"],
    "properties": {
        "error": {"type": "string", "minLength": 1},
        "message": {"type": "string", "minLength": 1},
        "details": {"type": "object"},
    },
}

# Statuses a route sends beyond those its shape implies, keyed by operationId.
_ROUTE_REFUSALS: dict[str, frozenset[int]] = {
    "createRun": frozenset({409, 422}),  # idempotency conflicts; capability_not_provided
    "listRuns": frozenset({404}),  # runList switched off
    "cancelRun": frozenset({409}),  # run_terminal, idempotency conflicts
    "bulkCancelRuns": frozenset({409}),  # idempotency conflicts (each id answers in its entry)
    "pauseRun": frozenset({409}),  # run_terminal, run_state_conflict, idempotency conflicts
    "resumeRun": frozenset({409}),  # run_terminal, run_state_conflict, idempotency conflicts
    "getEvalSummary": frozenset({409}),  # the eval run is still active
    "forkRun": frozenset({409, 410, 422}),  # active source; fixtures erased; fork_point_invalid
    "getWorkflow": frozenset({404}),
    "getAgent": frozenset({404}),
    "wopevalPutSuite": frozenset({409}),  # wopeval.suite_version_exists
    "wopevalGetSuite": frozenset({404}),
    "wopevalCalibrateJudge": frozenset({404}),  # the project declares no such judge
    "wopevalEraseToolContent": frozenset({409}),  # the run is still active
    "getEffectSeamManifest": frozenset({404}),  # replay switched off
}
# (location, name) → the schema of what the route accepts, in place of the declared type.
_PARAMETER_SCHEMAS: dict[tuple[str, str], JsonObject] = {
    ("path", "runId"): {"type": "string", "pattern": ids.PROJECTED_RUN_ID_PATTERN},
    # diffRun's second run.
    ("query", "against"): {"type": "string", "pattern": ids.PROJECTED_RUN_ID_PATTERN},
    ("path", "ref"): {"type": "string", "pattern": evals.SUITE_REF_PATTERN},
    # An id outside the grammar names nothing: 404, like an unknown one.
    ("path", "workflowId"): {"type": "string", "pattern": ids.AUTHOR_ID_PATTERN},
    ("path", "agentId"): {"type": "string", "pattern": ids.AUTHOR_ID_PATTERN},
    # Any other mode is refused with its own code, `unsupported_stream_mode` (events.md).
    ("query", "streamMode"): {"type": "string", "enum": list(STREAM_MODES)},
    ("header", "Last-Event-ID"): {
        "type": "integer",
        "minimum": -1,
        "maximum": limits.SEQUENCE_MAX,
    },
}
_BODY_METHODS = frozenset({"post", "put", "patch"})
_METHOD_NOT_ALLOWED = (
    "A method a path does not serve is answered `405 wopeval.method_not_allowed` "
    "with an `Allow` header."
)


def _refusals(path: str, method: str, operation: JsonObject) -> frozenset[int]:
    """Every error status the operation documented at `method path` can answer."""
    # The request guard and version negotiation see every request; any route may find the
    # host's database out of reach (503 `service_unavailable`, api/errors.py `CrashGuard`):
    # documented on every one, the few that read no store included, rather than missed on one
    # (the health endpoint's `wopeval.not_ready` is a 503 too).
    statuses = {400, 406, 503}
    if operation.get("security"):
        statuses.add(401)
    if "{runId}" in path:
        statuses |= {403, 404}
    if method in _BODY_METHODS:
        statuses.add(413)
    return frozenset(statuses | _ROUTE_REFUSALS.get(str(operation["operationId"]), frozenset()))


def install(app: FastAPI) -> None:
    def openapi() -> JsonObject:
        if app.openapi_schema is None:
            app.openapi_schema = _document(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _document(app: FastAPI) -> JsonObject:
    description = f"{app.description}\n\n{_METHOD_NOT_ALLOWED}"
    document = get_openapi(
        title=app.title, version=app.version, description=description, routes=app.routes
    )
    components = document.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    schemas[_ENVELOPE] = _ENVELOPE_SCHEMA
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", ()):
                accepted = _PARAMETER_SCHEMAS.get((parameter["in"], parameter["name"]))
                if accepted is not None:
                    default = parameter["schema"].get("default")
                    parameter["schema"] = (
                        accepted if default is None else accepted | {"default": default}
                    )
            responses = operation["responses"]
            responses.pop("422", None)
            for status in sorted(_refusals(path, method, operation)):
                responses[str(status)] = _refusal(status)
    return document


def _refusal(status: int) -> JsonObject:
    reference: JsonObject = {"$ref": f"#/components/schemas/{_ENVELOPE}"}
    return {
        "description": HTTPStatus(status).phrase,
        "content": {"application/json": {"schema": reference}},
    }
