"""Every route and page, from the app's own route table, refuses tenant A's ids to tenant B
exactly as it refuses ids that do not exist: the same status, the same body (no existence
leak). A route that takes no id is exempt by name, with its reason; a new route that is
neither covered nor exempt fails `test_every_route_is_covered_or_exempt`."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.routing import iter_route_contexts
from openwop_client.wire_id import project_id
from starlette.routing import BaseRoute, compile_path

from wopeval.api.routing import RoutesOnFirstUse
from wopeval.hosting.app import host_app
from wopeval.settings import Settings

from ._server import TENANT_A, TENANT_B, ServerHandle
from ._support import COUNTER_TOOL, unique
from .evals._evals import new_suite_id, publish, run_eval, suite, task
from .test_dashboard_http import _browser, _sign_in

Route = tuple[str, str]
"""(method, path template) as the route table names it."""

EXEMPT: dict[Route, str] = {
    ("GET", "/openapi.json"): "the host's API description, the same for every caller",
    ("GET", "/.well-known/openwop"): "the host's capabilities, the same for every caller",
    ("GET", "/host/effect-seams"): "the host's replay seams, the same for every caller",
    ("GET", "/host/wopeval/health"): "the host's health, no tenant data",
    ("GET", "/workflows/{workflowId}"): "the project catalog, shared by the host's tenants",
    ("GET", "/agents"): "the project catalog, shared by the host's tenants",
    ("GET", "/agents/{agentId}"): "the project catalog, shared by the host's tenants",
    ("GET", "/host/wopeval/principal"): "the caller's own identity",
    ("GET", "/host/wopeval/conformance/counter/{key}"): (
        "a key names a counter of the caller's own tenant (test_tenants.py, own counters)"
    ),
    ("PUT", "/host/wopeval/suites"): "publishes to the caller's own tenant",
    ("GET", "/host/wopeval/suites"): "lists the caller's own suites",
    ("POST", "/host/wopeval/judges/{judgeId}/calibrations"): (
        "a judge of the shared catalog, calibrated on the caller's own labels and runs "
        "(tests/e2e/evals/test_calibration.py: another tenant's labels are never paired)"
    ),
    ("POST", "/runs"): (
        "creates in the caller's tenant; run ids in its body take RFC 0251/0252's uniform "
        "refusal (tests/e2e/evals/test_recorded_fixtures.py, test_regression.py)"
    ),
    ("GET", "/runs"): "lists the caller's own runs (test_tenants.py, lists)",
    **{
        (method, path): (
            "the token is the credential: one live invocation's capability, checked against "
            "its tenant by the invocation's own guard (tests/e2e/mcp, tests/e2e/llm)"
        )
        for method, path in [
            ("GET", "/host/wopeval/mcp/{token}"),
            ("POST", "/host/wopeval/mcp/{token}"),
            ("DELETE", "/host/wopeval/mcp/{token}"),
            ("POST", "/host/wopeval/openai/{token}/v1/chat/completions"),
            ("POST", "/host/wopeval/openai/{token}/v1/responses"),
            ("POST", "/host/wopeval/anthropic/{token}/v1/messages"),
        ]
    },
    ("GET", "/ui/sign-in"): "the sign-in form, before any session",
    ("POST", "/ui/sign-in"): "signs in with a key of the caller's own",
    ("POST", "/ui/sign-out"): "ends the caller's own session",
    ("GET", "/ui"): "redirects to the caller's run list",
    ("GET", "/ui/"): "redirects to the caller's run list",
    ("GET", "/ui/runs"): "lists the caller's own runs",
    ("GET", "/ui/suites"): "lists the caller's own suites",
    ("GET", "/ui/static"): "the dashboard's static files, the same for every caller",
    **{
        (method, "/ui/{rest}"): (
            "the dashboard's not-found page, the same for every caller; a run id pasted with "
            "its slash is sent to that run's page, which is covered "
            "(tests/e2e/test_dashboard_errors.py)"
        )
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE")
    },
}

PATH_IDS = ("runId", "taskId", "invocationId", "ref", "suiteId")
"""The path parameters that name a tenant's data: a route with any of them is covered."""


@dataclass(frozen=True)
class Extra:
    """What a covered route takes beside its path: ids in its query or body."""

    query: dict[str, str] = field(default_factory=dict)
    """Query values; `{runId}` in one is replaced like a path parameter."""
    body: dict[str, Any] | None = None
    form: bool = False
    """A dashboard form post (with the session's CSRF token)."""


EXTRAS: dict[Route, Extra] = {
    ("GET", "/runs/{runId}:diff"): Extra(query={"against": "{runId}"}),
    ("GET", "/runs/{runId}/events"): Extra(query={"timeoutSeconds": "1"}),
    ("GET", "/runs/{runId}/events/poll"): Extra(query={"timeoutSeconds": "1"}),
    ("POST", "/runs/{runId}:fork"): Extra(body={"mode": "replay"}),
    ("POST", "/runs:bulk-cancel"): Extra(body={"runIds": ["{runId}"]}),
    ("POST", "/ui/runs/{runId}/cancel"): Extra(form=True),
    ("POST", "/runs/{runId}/annotations"): Extra(body={"signal": {"kind": "flag"}}),
    ("POST", "/ui/evals/{runId}/tasks/{taskId}/label"): Extra(form=True),
    ("GET", "/ui/compare"): Extra(query={"baseline": "{runId}", "candidate": "{runId}"}),
    ("GET", "/ui/live"): Extra(query={"run": "{runId}:-1"}),
}
"""Covered routes that take an id outside their path, or need more to be asked at all."""


def route_table() -> list[Route]:
    """Every (method, path) the app serves, read from its route table (the app is built,
    not started: its data directory is never touched)."""
    app = host_app(Settings(data_dir=Path("/nonexistent/wopeval-route-table")))
    routes = []
    for context in iter_route_contexts(_built(app.routes)):
        assert context.path is not None, context
        # A mount (the static files) has no methods of its own: it answers GET.
        # The template as the wire names it: `{runId:run}` (a converter) is `{runId}`.
        template = compile_path(context.path)[1]
        routes += [(method, template) for method in context.methods or {"GET"}]
    return sorted(route for route in routes if route[0] != "HEAD")


def _built(routes: list[BaseRoute]) -> list[BaseRoute]:
    """`routes` with each group built on first use (the dashboard's pages) built and in place."""
    return [
        built
        for route in routes
        for built in (route.router.routes if isinstance(route, RoutesOnFirstUse) else [route])
    ]


def _names(route: Route) -> set[str]:
    return set(re.findall(r"{(\w+)}", route[1]))


def _covered(route: Route) -> bool:
    return route in EXTRAS or bool(_names(route) & set(PATH_IDS))


ROUTES = route_table()
COVERED = [route for route in ROUTES if _covered(route) and route not in EXEMPT]


def test_every_route_is_covered_or_exempt() -> None:
    neither = [route for route in ROUTES if not _covered(route) and route not in EXEMPT]
    assert not neither, f"routes neither covered by the tenant test nor exempt: {neither}"
    both = [route for route in ROUTES if _covered(route) and route in EXEMPT]
    assert not both, f"routes both covered and exempt: {both}"
    stale = sorted(set(EXEMPT) - set(ROUTES)) + sorted(set(EXTRAS) - set(ROUTES))
    assert not stale, f"listed routes the app no longer serves: {stale}"
    # The parameters a covered route takes are all ones this test gives values for.
    unknown = {r: _names(r) - set(PATH_IDS) for r in COVERED if _names(r) - set(PATH_IDS)}
    assert not unknown, unknown
    assert any(path.startswith("/host/wopeval/") for _, path in COVERED)
    assert any(path.startswith("/ui/") for _, path in COVERED)


# ── tenant A's data, and ids of nothing ──────────────────────────────


@dataclass(frozen=True)
class Ids:
    """A value for each id a route takes, by its parameter name."""

    values: dict[str, str]

    def fill(self, template: str, *, path: bool) -> str:
        def value(match: re.Match[str]) -> str:
            given = self.values[match.group(1)]
            # A run id in a path segment takes its `~2F` form; in a query, the plain one.
            return project_id(given) if path and match.group(1) == "runId" else given

        return re.sub(r"{(\w+)}", value, template)


@dataclass(frozen=True)
class World:
    a: Ids
    """Tenant A's real ids: a finished eval run, one of its tasks and invocations, a suite."""
    missing: Ids
    """Ids of the same shapes that name nothing at all."""
    b_run: str
    """A finished eval run of tenant B's own (for an invocation id asked inside it)."""


@pytest.fixture(scope="module")
def world(server: ServerHandle) -> World:
    def eval_of(tenant: str, suite_id: str) -> tuple[str, str]:
        document = suite(suite_id, [task("only", [{"tool": COUNTER_TOOL, "args": {
            "op": "inc", "key": unique("tenant-routes")}}])])  # fmt: skip
        with server.http(tenant) as http:
            ref = publish(http, document)
            return run_eval(server.client(tenant), http, ref).run_id, ref

    suite_id = new_suite_id("routes")
    a_run, a_ref = eval_of(TENANT_A, suite_id)
    b_run, _ = eval_of(TENANT_B, new_suite_id("routes"))
    with server.http(TENANT_A) as http:
        listed = http.get(f"/host/wopeval/runs/{project_id(a_run)}/invocations")
        assert listed.status_code == 200, listed.text
        invocation_id = listed.json()["invocations"][0]["invocationId"]
        # A's own reads of its run, so B's ask the host while it keeps their answers.
        for read in (f"/runs/{project_id(a_run)}", f"/runs/{project_id(a_run)}/events/poll"):
            assert http.get(read, params={"timeoutSeconds": "1"}).status_code == 200
    a = Ids(
        {
            "runId": a_run,
            "taskId": "only",
            "invocationId": invocation_id,
            "ref": a_ref,
            "suiteId": suite_id,
        }
    )
    missing_suite = new_suite_id("missing")
    missing = Ids(
        {
            "runId": f"{TENANT_A}/{uuid.uuid4().hex}",
            "taskId": "no-such-task",
            "invocationId": uuid.uuid4().hex,
            "ref": f"{missing_suite}@1.0.0",
            "suiteId": missing_suite,
        }
    )
    return World(a, missing, b_run)


@dataclass
class Callers:
    """Tenant B as the API sees it (its key) and as the dashboard does (its session)."""

    api: httpx.Client
    browser: httpx.Client
    csrf: str


@pytest.fixture(scope="module")
def tenant_b(server: ServerHandle) -> Iterator[Callers]:
    with server.http(TENANT_B) as api, _browser(server) as browser:
        yield Callers(api, browser, _sign_in(browser, server, TENANT_B))


# ── the uniform refusal ──────────────────────────────────────────────

_VOLATILE = re.compile(r'(nonce|name="csrf" value)="[^"]*"')


def ask(callers: Callers, route: Route, ids: Ids) -> tuple[int, str, str]:
    """B's answer to the route asked with `ids`: status, content type and body, with the ids
    asked written as `<id:name>` (an answer may echo what it was asked) and each page's
    per-response nonce and token blanked."""
    method, template = route
    extra = EXTRAS.get(route, Extra())
    url = ids.fill(template, path=True)
    query = {name: ids.fill(value, path=False) for name, value in extra.query.items()}
    if template.startswith("/ui"):
        form = {"csrf": callers.csrf} if extra.form else None
        response = callers.browser.request(method, url, params=query, data=form)
    else:
        body = (
            None if extra.body is None else json.loads(ids.fill(json.dumps(extra.body), path=False))
        )
        response = callers.api.request(method, url, params=query, json=body)
    text = response.text
    for name, value in sorted(ids.values.items(), key=lambda item: -len(item[1])):
        text = text.replace(project_id(value), f"<id:{name}>").replace(value, f"<id:{name}>")
    text = _VOLATILE.sub(r'\1=""', text)
    return response.status_code, response.headers.get("content-type", ""), text


@pytest.mark.parametrize("route", COVERED, ids=lambda route: f"{route[0]} {route[1]}")
def test_tenant_b_is_refused_tenant_a_ids_as_ids_of_nothing(
    world: World, tenant_b: Callers, route: Route
) -> None:
    foreign = ask(tenant_b, route, world.a)
    nothing = ask(tenant_b, route, world.missing)
    assert foreign == nothing, f"{route}: A's ids are answered unlike ids of nothing"
    status, code = expected_refusal(route)
    assert foreign[0] == status, foreign
    assert code in foreign[2], foreign


INSIDE_OWN_RUN = [route for route in COVERED if "invocationId" in _names(route)]


@pytest.mark.parametrize("route", INSIDE_OWN_RUN, ids=lambda route: f"{route[0]} {route[1]}")
def test_tenant_a_invocation_ids_inside_tenant_b_runs_name_nothing(
    world: World, tenant_b: Callers, route: Route
) -> None:
    """An invocation id is no run id: asked inside B's own run, A's is answered as an id of
    nothing (the read goes through B's run's handle)."""
    own_run = {"runId": world.b_run}
    foreign = ask(tenant_b, route, Ids({**world.a.values, **own_run}))
    nothing = ask(tenant_b, route, Ids({**world.missing.values, **own_run}))
    assert foreign == nothing
    assert foreign[0] == 404, foreign
    assert "not_found" in foreign[2], foreign


def expected_refusal(route: Route) -> tuple[int, str]:
    """The uniform refusal's status and error code: a run id of another tenant is refused by
    its tenant segment (403 `id_tenant_mismatch`, whether or not the run exists); other ids
    are the caller's own or nothing (404). Bulk cancel answers each id in its entry. The
    dashboard answers another tenant's run as an unknown one of the caller's own (404)."""
    if route == ("POST", "/runs:bulk-cancel"):
        return 200, "id_tenant_mismatch"
    if route[1].startswith("/ui/"):
        return 404, "not_found"
    extra = EXTRAS.get(route, Extra())
    if "runId" in _names(route) or any("{runId}" in value for value in extra.query.values()):
        return 403, "id_tenant_mismatch"
    return 404, "not_found"
