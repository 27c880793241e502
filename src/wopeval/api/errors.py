"""The one place that renders the error envelope (G3): every refusal leaves through here."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from wopeval.api.invocation_token import mask_tokens
from wopeval.api.json_response import JSONResponse
from wopeval.api.routing import allowed_methods
from wopeval.engine.runlog.steps import store_unreachable
from wopeval.wire import errors

log = logging.getLogger("wopeval.api")

# The statuses Starlette and FastAPI raise themselves, each answered with its registered code.
_FRAMEWORK_REFUSALS: dict[int, type[errors.WireError]] = {
    400: errors.ValidationFailed,
    401: errors.Unauthenticated,
    403: errors.Forbidden,
    404: errors.NotFound,
    405: errors.MethodNotAllowed,
    413: errors.PayloadTooLarge,
}

RETRY_AFTER_SECONDS = 1
"""What a `503 service_unavailable` asks its client to wait: the pool replaces a connection
the server ended on its next check-out (store/db.py), so the next try mostly succeeds; a
database that stays down (a restart) answers 503 again, each at once."""


def envelope_response(
    error: errors.WireError, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    extra = dict(headers or {})
    if isinstance(error, errors.Unauthenticated):
        extra["WWW-Authenticate"] = "Bearer"
    elif isinstance(error, errors.ServiceUnavailable):
        extra["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return JSONResponse(error.envelope(), status_code=error.status, headers=extra or None)


def validation_refusal(problems: list[Any]) -> errors.ValidationFailed:
    """A 400 naming the first offending property in `details.field` (`unknown property 'foo'`)."""
    if not problems:
        return errors.ValidationFailed()
    problem = problems[0]
    # `[key]` marks a refused object key: the field is the key's own path.
    location = [
        str(part)
        for part in problem.get("loc", ())
        if part not in ("body", "query", "path", "header", "[key]")
    ]
    where = ".".join(location)
    details = {"field": where} if where else None
    kind = problem.get("type", "")
    if kind == "extra_forbidden":
        message = f"unknown property '{where}'" if where else "unknown property"
    elif kind in ("json_invalid", "json_type"):
        message = "The request body is not valid JSON."
    elif kind == "missing":
        message = f"'{where}' is required" if where else "a body is required"
    else:
        text = str(problem.get("msg", "is not valid"))
        message = f"'{where}': {text}" if where else text
    return errors.ValidationFailed(message, details=details)


def install(app: FastAPI) -> None:
    async def on_wire_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, errors.WireError)
        return envelope_response(exc)

    async def on_validation(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return envelope_response(validation_refusal(list(exc.errors())))

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        refusal = _FRAMEWORK_REFUSALS.get(exc.status_code)
        if refusal is None:
            log.error(
                "the framework answered %s %s with an unmapped status %d (%s)",
                request.method,
                request.url.path,
                exc.status_code,
                exc.detail,
            )
            return envelope_response(errors.InternalError())
        if exc.status_code != 405:
            return envelope_response(refusal())
        # RFC 9110 §15.5.6: a 405 names every method the path does allow.
        methods = allowed_methods(request.app.router, request.scope)
        return envelope_response(refusal(), {"Allow": ", ".join(methods)})

    async def on_crash(_request: Request, exc: Exception) -> JSONResponse:
        # Only the outer middleware can fail here; a route's crash stops at CrashGuard.
        log.error("unhandled error outside the routes", exc_info=exc)
        return envelope_response(errors.InternalError())

    app.add_exception_handler(errors.WireError, on_wire_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Exception, on_crash)


class CrashGuard:
    """Answers an exception no handler knows with the 500 envelope, on a connection that stays open.

    Starlette's last-resort handler answers and then re-raises, and uvicorn
    closes the connection on any exception that reaches it; here the exception
    stops, logged with its traceback and the run the request named.

    The database out of reach (a connection the server ended under a statement in
    flight, a restart, a failover, new connections refused: store `out_of_reach`; or a
    step the route handed the run log writer, a cancel, a pause, a resume, that could not
    land: `StepNotLanded`) is no bug of the host's: `503 service_unavailable` with
    `Retry-After`, the driver's message (the database's address and name) in the host's
    log only, no traceback.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watched_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watched_send)
        except Exception as exc:
            # The router leaves the matched path parameters in the shared scope.
            run = scope.get("path_params", {}).get("runId", "-")
            if store_unreachable(exc):
                log.warning(
                    "the database was out of reach answering %s %s (run %s): %s",
                    scope["method"],
                    mask_tokens(scope["path"]),
                    run,
                    getattr(exc, "orig", None) or exc,
                )
                if not started:
                    await envelope_response(errors.ServiceUnavailable())(scope, receive, send)
                return
            log.error(
                "unhandled error answering %s %s (run %s)",
                scope["method"],
                mask_tokens(scope["path"]),  # an invocation's token is never logged
                run,
                exc_info=exc,
            )
            # Once part of a response is out, the server's closing the connection ends it.
            if not started:
                await envelope_response(errors.InternalError())(scope, receive, send)
