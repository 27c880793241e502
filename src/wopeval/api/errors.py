"""The one place that renders the error envelope (G3): every refusal leaves through here."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from wopeval.wire import errors

log = logging.getLogger("wopeval.api")


def envelope_response(
    error: errors.WireError, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    extra = dict(headers or {})
    if isinstance(error, errors.Unauthenticated):
        extra["WWW-Authenticate"] = "Bearer"
    return JSONResponse(error.envelope(), status_code=error.status, headers=extra or None)


def describe_validation(problems: list[Any]) -> str:
    """One sentence naming the first offending property, e.g. `unknown property 'foo'`."""
    if not problems:
        return "The request is not valid."
    problem = problems[0]
    location = [
        str(part) for part in problem.get("loc", ()) if part not in ("body", "query", "path")
    ]
    where = ".".join(location)
    kind = problem.get("type", "")
    if kind == "extra_forbidden":
        return f"unknown property '{where}'" if where else "unknown property"
    if kind in ("json_invalid", "json_type"):
        return "The request body is not valid JSON."
    if kind == "missing":
        return f"'{where}' is required" if where else "a body is required"
    message = str(problem.get("msg", "is not valid"))
    return f"'{where}': {message}" if where else message


def install(app: FastAPI) -> None:
    async def on_wire_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, errors.WireError)
        return envelope_response(exc)

    async def on_validation(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return envelope_response(errors.ValidationFailed(describe_validation(list(exc.errors()))))

    async def on_http(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        if exc.status_code == 404:
            return envelope_response(errors.NotFound())
        if exc.status_code == 405:
            # RFC 9110 §15.5.6: a 405 names the methods the path does allow.
            allow = (
                {"Allow": exc.headers["Allow"]} if exc.headers and "Allow" in exc.headers else None
            )
            return envelope_response(errors.MethodNotAllowed(), allow)
        return envelope_response(errors.InternalError())

    async def on_crash(_request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error", exc_info=exc)
        return envelope_response(errors.InternalError())

    app.add_exception_handler(errors.WireError, on_wire_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Exception, on_crash)
