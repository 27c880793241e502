"""The OpenWOP error envelope and the codes this host emits.

The code table follows `spec/v2/errors.json` (errors.md) for registered codes,
RFC 0251 §C / RFC 0252 §C for the uniform eval refusals, and versioning.md §5
for the vendor codes (`wopeval.eval_recorded_fixtures_gone`,
`wopeval.method_not_allowed`), used where no registered code fits.

Hierarchy::

    WireError                       any refusal rendered as {error, message, details?}
    ├── ValidationFailed            400 validation_error
    ├── Unauthenticated             401 unauthenticated
    ├── Forbidden                   403 forbidden
    ├── IdTenantMismatch            403 id_tenant_mismatch
    ├── NotFound                    404 not_found
    ├── Conflict-family             409 run_terminal / run_state_conflict / idempotency_*
    ├── CapabilityNotProvided       422 capability_not_provided
    ├── ServiceUnavailable          503 service_unavailable (the database out of reach)
    ├── NotReady                    503 wopeval.not_ready (the health endpoint)
    └── ...                         one class per code in ErrorCode
"""

from __future__ import annotations

import enum
from typing import Any


class ErrorCode(enum.Enum):
    """A wire error code with its registered HTTP status and default message."""

    def __new__(cls, code: str, status: int, message: str) -> ErrorCode:
        member = object.__new__(cls)
        member._value_ = code
        member.status = status
        member.default_message = message
        return member

    status: int
    default_message: str

    VALIDATION_ERROR = ("validation_error", 400, "The request is not valid.")
    UNSUPPORTED_STREAM_MODE = ("unsupported_stream_mode", 400, "That stream mode is not supported.")
    IDEMPOTENCY_KEY_INVALID = (
        "idempotency_key_invalid",
        400,
        "Idempotency-Key must match ^[A-Za-z0-9._~-]{22,128}$.",
    )
    UNAUTHENTICATED = ("unauthenticated", 401, "A valid bearer API key is required.")
    FORBIDDEN = ("forbidden", 403, "The credential lacks the scope this operation needs.")
    ID_TENANT_MISMATCH = (
        "id_tenant_mismatch",
        403,
        "The id names a tenant other than the caller's.",
    )
    NOT_FOUND = ("not_found", 404, "No such resource.")
    # No registered code covers a wrong method (errors.json 2.46), so it is a vendor code.
    METHOD_NOT_ALLOWED = (
        "wopeval.method_not_allowed",
        405,
        "That method is not allowed on this path.",
    )
    PROTOCOL_VERSION_UNSUPPORTED = (
        "protocol_version_unsupported",
        406,
        "The requested OpenWOP-Version major is not served by this host.",
    )
    RUN_TERMINAL = ("run_terminal", 409, "The run has already finished.")
    RUN_STATE_CONFLICT = ("run_state_conflict", 409, "The run is not in a state that allows this.")
    IDEMPOTENCY_KEY_MISMATCH = (
        "idempotency_key_mismatch",
        409,
        "This Idempotency-Key was used with a different request.",
    )
    IDEMPOTENCY_IN_FLIGHT = (
        "idempotency_in_flight",
        409,
        "A request with this Idempotency-Key is still being processed.",
    )
    SUITE_VERSION_EXISTS = (
        "wopeval.suite_version_exists",
        409,
        "This suiteId and version already hold a different document; publish a new version.",
    )
    RECORDED_FIXTURES_GONE = (
        "wopeval.eval_recorded_fixtures_gone",
        410,
        "The recorded fixtures this eval run was served have been erased; it cannot be replayed.",
    )
    PAYLOAD_TOO_LARGE = ("payload_too_large", 413, "The request body is too large.")
    CAPABILITY_NOT_PROVIDED = (
        "capability_not_provided",
        422,
        "This host does not provide the capability the request needs.",
    )
    FORK_POINT_INVALID = ("fork_point_invalid", 422, "fromSeq does not name an event of the run.")
    INTERNAL_ERROR = ("internal_error", 500, "The host failed to handle the request.")
    # The host's database out of reach mid-request (a restart, a failover): answered with
    # `Retry-After` (api/errors.py), as a registered, retriable code.
    SERVICE_UNAVAILABLE = (
        "service_unavailable",
        503,
        "The host's database is out of reach; try again shortly.",
    )
    # The health endpoint's readiness answer; no registered code names "not ready yet".
    NOT_READY = ("wopeval.not_ready", 503, "This process is not ready to serve.")


class WireError(Exception):
    """A refusal that reaches the client as the OpenWOP error envelope."""

    code: ErrorCode = ErrorCode.INTERNAL_ERROR

    def __init__(self, message: str | None = None, *, details: dict[str, Any] | None = None):
        self.message = message or self.code.default_message
        self.details = details
        super().__init__(self.message)

    @property
    def status(self) -> int:
        return self.code.status

    def envelope(self) -> dict[str, Any]:
        body: dict[str, Any] = {"error": self.code.value, "message": self.message}
        if self.details is not None:
            body["details"] = self.details
        return body


class ValidationFailed(WireError):
    code = ErrorCode.VALIDATION_ERROR


class UnsupportedStreamMode(WireError):
    code = ErrorCode.UNSUPPORTED_STREAM_MODE


class IdempotencyKeyInvalid(WireError):
    code = ErrorCode.IDEMPOTENCY_KEY_INVALID


class Unauthenticated(WireError):
    code = ErrorCode.UNAUTHENTICATED


class Forbidden(WireError):
    code = ErrorCode.FORBIDDEN


class IdTenantMismatch(WireError):
    code = ErrorCode.ID_TENANT_MISMATCH


class NotFound(WireError):
    code = ErrorCode.NOT_FOUND


class MethodNotAllowed(WireError):
    code = ErrorCode.METHOD_NOT_ALLOWED


class ProtocolVersionUnsupported(WireError):
    code = ErrorCode.PROTOCOL_VERSION_UNSUPPORTED


class RunTerminal(WireError):
    code = ErrorCode.RUN_TERMINAL


class RunStateConflict(WireError):
    code = ErrorCode.RUN_STATE_CONFLICT


class IdempotencyKeyMismatch(WireError):
    code = ErrorCode.IDEMPOTENCY_KEY_MISMATCH


class IdempotencyInFlight(WireError):
    code = ErrorCode.IDEMPOTENCY_IN_FLIGHT


class SuiteVersionExists(WireError):
    code = ErrorCode.SUITE_VERSION_EXISTS


class RecordedFixturesGone(WireError):
    code = ErrorCode.RECORDED_FIXTURES_GONE


class PayloadTooLarge(WireError):
    code = ErrorCode.PAYLOAD_TOO_LARGE


class CapabilityNotProvided(WireError):
    code = ErrorCode.CAPABILITY_NOT_PROVIDED


class ForkPointInvalid(WireError):
    code = ErrorCode.FORK_POINT_INVALID


class InternalError(WireError):
    code = ErrorCode.INTERNAL_ERROR


class ServiceUnavailable(WireError):
    code = ErrorCode.SERVICE_UNAVAILABLE


class NotReady(WireError):
    code = ErrorCode.NOT_READY


def error_pointer(loc: tuple[int | str, ...]) -> str:
    """A pydantic `loc` as `tasks[2].fixtures.toolResponses[0].argsMatch`; `(root)` if empty."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text or "(root)"
