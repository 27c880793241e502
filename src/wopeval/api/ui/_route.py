"""How a dashboard route answers a refusal: the wire's status and code, as a page that says
what to do next.

A page reads through the same engine calls as the wire routes, so it is
refused by the same rules: bad input 400, a forbidden form 403, an unknown
suite 404. A run is the one difference: a run id of another tenant and an
unknown one get one page, `404 not_found` (docs/decisions.md), so a person who
pastes an id learns what to do and never whether another tenant's run exists.
A refusal page never echoes the id asked for: two refusals that are alike are
alike byte for byte. Every other path under `/ui` gets the not-found page too
(`fallback`), never the wire's JSON envelope.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse
from fastapi.routing import APIRoute
from starlette.routing import Router

from wopeval.api.errors import validation_refusal
from wopeval.api.routing import allowed_methods
from wopeval.api.served import ServedHost
from wopeval.api.ui._render import Chrome, Refusal, render
from wopeval.api.ui.deps import SessionDep, SignInRequired, session_of
from wopeval.store import OwnedRun
from wopeval.wire import errors, ids

SIGN_IN = "/ui/sign-in"


class Advice(enum.Enum):
    """What a refusal page tells its reader to do next (templates/refusal.html)."""

    RUN = "run"
    """No such run among the tenant's: how to find run ids, and how to see another tenant's."""
    RUN_ID = "run-id"
    """A run id of the wrong form: what one looks like."""
    PAGE = "page"
    """No such page: the pages there are."""
    SUITE = "suite"
    """No such suite: the suites page."""
    INPUT = "input"
    """A bad query value: the same page without the query."""
    FORM = "form"
    """A refused form: reload its page and send it again."""
    SHORTER = "shorter"
    """A form over the host's body limit: send less."""
    OTHER = "other"


class Refused(Exception):
    """A refusal with the advice its page gives."""

    def __init__(self, refusal: errors.WireError, advice: Advice) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal
        self.advice = advice


NO_SUCH_RUN = "No run with this id is among your runs."


class UiRoute(APIRoute):
    """A route whose refusals are pages, and whose signed-out callers go to the sign-in page."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def answer(request: Request) -> Response:
            try:
                return await handler(request)
            except SignInRequired:
                return sign_in_redirect(request)
            except RequestValidationError as invalid:
                refused = validation_refusal(list(invalid.errors()))
                return refusal_page(request, refused, Advice.INPUT)
            except Refused as refused:
                return refusal_page(request, refused.refusal, refused.advice)
            except errors.WireError as refused:
                return refusal_page(request, refused, _advice(refused))

        return answer


def _advice(refused: errors.WireError) -> Advice:
    if isinstance(refused, errors.ValidationFailed):
        return Advice.INPUT
    if isinstance(refused, errors.Forbidden):
        return Advice.FORM
    return Advice.OTHER


def refusal_page(
    request: Request,
    refused: errors.WireError,
    advice: Advice,
    headers: dict[str, str] | None = None,
) -> Response:
    refusal = Refusal(refused.status, refused.code.value, refused.message, advice.value)
    chrome = Chrome(session_of(request), "none", f"{refused.status} {refused.code.value}")
    page = render("refusal.html", chrome, refusal, status=refused.status)
    page.headers.update(headers or {})
    return page


async def load_run(host: ServedHost, session: SessionDep, segment: str) -> OwnedRun:
    """The run a `{runId}` segment (or query value) names, read as `GET /runs/{runId}` reads it.

    A foreign tenant's run and an unknown one are one refusal (`NO_SUCH_RUN`,
    404); an id of the wrong form is the wire's 400 with advice on the form.
    """
    try:
        run_id = ids.run_id_from_path(segment, session.principal.tenant)
        return await host.engine.get_run(session.principal, run_id)
    except (errors.IdTenantMismatch, errors.NotFound):
        raise Refused(errors.NotFound(NO_SUCH_RUN), Advice.RUN) from None
    except errors.ValidationFailed as wrong:
        raise Refused(wrong, Advice.RUN_ID) from None


def sign_in_redirect(request: Request) -> Response:
    """To the sign-in page, which comes back here (GET) after signing in."""
    back = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    target = SIGN_IN if request.method != "GET" else f"{SIGN_IN}?{urlencode({'next': back})}"
    return RedirectResponse(target, status_code=303)


def safe_next(value: str | None) -> str:
    """Where to go after signing in: a dashboard path only, never another site."""
    if value and value.startswith("/ui/") and not value.startswith("//") and "\\" not in value:
        return value
    return "/ui/runs"


_PASTED_RUN = re.compile(r"^(runs|evals)/([^/]+/[^/]+)(/tasks/[^/]+)?$")
"""A page path with a run id pasted as `wopeval` prints it, `<tenant>/<id>`, slash and all."""


def fallback(pages: Router) -> APIRouter:
    """The answer to every path under `/ui` that none of `pages` serves: a pasted run id's page,
    else the not-found page (405 where a page serves the path with other methods). Mounted
    after the pages and the static files."""
    router = APIRouter(prefix="/ui", route_class=UiRoute, include_in_schema=False)

    @router.api_route("/{rest:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
    async def no_such_page(rest: str, request: Request) -> Response:
        pasted = _PASTED_RUN.match(rest)
        if request.method == "GET" and pasted and ids.is_run_id(pasted.group(2)):
            # That run's page, its id as one path segment; the page refuses what it must.
            page = f"/ui/{pasted.group(1)}/{ids.project(pasted.group(2))}{pasted.group(3) or ''}"
            return RedirectResponse(page, status_code=303)
        served = [method for method in allowed_methods(pages, request.scope) if method != "HEAD"]
        if served:
            # RFC 9110 §15.5.6: a 405 names every method the path does allow.
            allow = {"Allow": ", ".join(served)}
            return refusal_page(request, errors.MethodNotAllowed(), Advice.PAGE, allow)
        raise Refused(errors.NotFound("No such page."), Advice.PAGE)

    return router
