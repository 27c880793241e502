"""A host seen from outside: OpenWOP v2 operations over HTTPX, and nothing else.

The CLI and the demo talk to a host through `WireClient` only, embedded or
remote (the embedded host is the same app on a loopback port), so whatever
works here works against any OpenWOP host serving the same operations. The
wopeval host routes (`/host/wopeval/...`) are optional: their methods answer
`None` when a host does not serve them, and the caller decides what that means.

    ClientError       the client cannot go on; the message says why
     ├── HostError    the host answered with an error envelope
     └── Unreachable  no answer at all
"""

from __future__ import annotations

import ssl
import sys
from collections.abc import Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pydantic import BaseModel, ValidationError

from wopeval.client._answers import (
    CallerTenant,
    LiveCalls,
    RunCreated,
    RunPage,
    RunSnapshot,
    SuiteLine,
    SuiteListing,
)
from wopeval.wire import ids
from wopeval.wire.errors import error_pointer
from wopeval.wire.json_text import JsonObject

# HTTPX imports its own command line (`httpx._main`: Click, Pygments, Rich's syntax and
# progress; ~20 ms) whenever those are installed, and Rich is. No wopeval process runs
# that command line: a None entry makes the import fail, which HTTPX handles by itself
# (its `main` then says the command line could not run). Issue 28, docs/decisions.md.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]  # None is a legal entry

import httpx  # noqa: E402 (after the entry above)

if TYPE_CHECKING:
    # The wire models of the events poll and the optional routes are imported by the
    # method that reads them: a listing needs none of them (issue 28,
    # tests/cli/test_fast_start.py).
    from wopeval.client._events_page import EventsPage
    from wopeval.wire.annotations import Annotation, CreateAnnotationRequest
    from wopeval.wire.calibration import CalibrationReport
    from wopeval.wire.invocations import InvocationList, InvocationStderr, RunModelCalls
    from wopeval.wire.task_detail import TaskDetail, TaskList

PROTOCOL_VERSION = "2.0"
"""Sent on every request: the major this client speaks (versioning.md §1.2)."""

_NOT_SERVED = frozenset({404, 405, 501})


class ClientError(Exception):
    """Something stops the client: a refused request, no host, a run that failed, bad setup."""


class HostError(ClientError):
    """The host answered with an error envelope (or something that is not one)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{message} (HTTP {status} {code})")
        self.status = status
        self.code = code
        self.message = message


class Unreachable(ClientError):
    """No answer from the host: refused, timed out, or not HTTP."""


def _tls_for(base_url: str) -> ssl.SSLContext | bool:
    """Verified TLS for an https host (HTTPX's default); for a plain-http one, a context that
    trusts no certificate at all, so never used and failing closed if it were: loading the
    certificate store costs ~25 ms of every command's start, and the client sends only paths
    under its base URL and follows no redirect."""
    if base_url.lower().startswith("http://"):
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return True


class WireClient:
    """A synchronous client for the operations the CLI needs (one per host, closed after use)."""

    def __init__(
        self, base_url: str, api_key: str, *, trust_env: bool = True, timeout: float = 60.0
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {api_key}", "OpenWOP-Version": PROTOCOL_VERSION},
            timeout=timeout,
            # A loopback host must never be reached through a proxy from the environment.
            trust_env=trust_env,
            verify=_tls_for(self.base_url),
        )

    def __enter__(self) -> WireClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # ── protocol operations ──────────────────────────────────────────

    def discovery(self) -> JsonObject:
        """The discovery document: open by design, its facets read where they are needed."""
        return self._json("GET", "/.well-known/openwop")

    def create_run(self, body: JsonObject) -> RunCreated:
        return self._read(RunCreated, "run", "POST", "/runs", json=body)

    def get_run(self, run_id: str) -> RunSnapshot:
        return self._read(RunSnapshot, "run", "GET", f"/runs/{ids.project(run_id)}")

    def run_pages(
        self,
        *,
        limit: int = 50,
        cursor: str | None = None,
        workflow_id: str | None = None,
        status: str | None = None,
        tag: str | None = None,
        agent_id: str | None = None,
        created_after: str | None = None,
    ) -> Iterator[RunPage]:
        """`GET /runs` page after page from `cursor`, until a page has no `nextCursor`
        (a caller that has seen enough stops asking)."""
        params: dict[str, str | int] = {"limit": limit}
        for name, value in (
            ("workflowId", workflow_id),
            ("status", status),
            ("tag", tag),
            ("agentId", agent_id),
            ("createdAfter", created_after),
        ):
            if value:
                params[name] = value
        while True:
            query = {**params, "cursor": cursor} if cursor else params
            page = self._read(RunPage, "runs", "GET", "/runs", params=query)
            yield page
            cursor = page.nextCursor
            if not cursor:
                return

    def get_workflow(self, workflow_id: str) -> JsonObject | None:
        """The workflow document; None when the host has no (longer any) such workflow."""
        return self._optional("GET", f"/workflows/{workflow_id}")

    def poll_events(
        self, run_id: str, *, after: int | None = None, wait_seconds: int = 10
    ) -> EventsPage:
        """`GET /runs/{id}/events/poll`: events after `after` (all when None)."""
        params: dict[str, int] = {"timeout": wait_seconds}
        if after is not None:
            params["afterSequence"] = after
        from wopeval.client._events_page import EventsPage

        return self._read(
            EventsPage,
            "events",
            "GET",
            f"/runs/{ids.project(run_id)}/events/poll",
            params=params,
            timeout=wait_seconds + 30.0,
        )

    def tenant(self) -> str:
        """The caller's tenant, as the host sees its key."""
        return self._read(CallerTenant, "principal", "GET", "/host/wopeval/principal").tenant

    def eval_summary(self, run_id: str) -> JsonObject:
        """The summary document as sent (`client.summary_from_wire` reads it leniently)."""
        return self._json("GET", f"/runs/{ids.project(run_id)}/eval-summary")

    def annotate(self, run_id: str, body: CreateAnnotationRequest) -> Annotation:
        """`POST /runs/{id}/annotations` (RFC 0056): the annotation as the host recorded it."""
        path = f"/runs/{ids.project(run_id)}/annotations"
        payload = body.model_dump(mode="json", exclude_none=True)
        from wopeval.wire.annotations import Annotation

        return self._read(Annotation, "annotation", "POST", path, json=payload)

    def annotations(self, run_id: str) -> list[Annotation] | None:
        """The run's annotations, oldest first; None when the host does not offer them (a host
        without the `feedback` family answers 404)."""
        body = self._optional("GET", f"/runs/{ids.project(run_id)}/annotations")
        from wopeval.wire.annotations import AnnotationList

        return None if body is None else read_shape(AnnotationList, body, "annotations").annotations

    # ── wopeval host routes (optional on other hosts) ────────────────

    def get_suite(self, ref: str) -> JsonObject | None:
        """The suite document a ref names, as stored (it may be published again verbatim);
        None when the host has no such suite or route."""
        return self._optional("GET", f"/host/wopeval/suites/{ref.removeprefix('suite://')}")

    def list_suites(self) -> SuiteListing | None:
        body = self._optional("GET", "/host/wopeval/suites")
        return None if body is None else read_shape(SuiteListing, body, "suites")

    def put_suite(self, document: JsonObject) -> tuple[bool, SuiteLine]:
        """Publish a suite version; `(created, listing)` — False when it already existed."""
        response = self._send("PUT", "/host/wopeval/suites", json=document)
        return response.status_code == 201, read_shape(SuiteLine, _body(response), "suite")

    def calibrate_judge(self, judge_id: str, since: str | None = None) -> CalibrationReport:
        """Calibrate a project judge against the caller's labels; the host records it."""
        body = {} if since is None else {"since": since}
        path = f"/host/wopeval/judges/{judge_id}/calibrations"
        from wopeval.wire.calibration import CalibrationReport

        return self._read(CalibrationReport, "calibration", "POST", path, json=body)

    def live_calls(self, run_id: str) -> int | None:
        """Tool calls of the run that reached a live tool; None when the host cannot say."""
        body = self._optional("GET", f"/host/wopeval/runs/{ids.project(run_id)}/live-calls")
        if body is None:
            return None
        calls = read_shape(LiveCalls, body, "live calls").liveCalls
        return int(calls) if isinstance(calls, int) else None

    def task_list(self, run_id: str) -> TaskList | None:
        """Every task of an eval run with its reason line; None when the host has no such route."""
        body = self._optional("GET", f"/host/wopeval/runs/{ids.project(run_id)}/tasks")
        from wopeval.wire.task_detail import TaskList

        return None if body is None else read_shape(TaskList, body, "task details")

    def task_detail(self, run_id: str, task_id: str) -> TaskDetail:
        """One task's trials: decision, expected value, grade, trace and misses.

        Asked only of a host that served `task_list`, so a 404 here is a real answer
        (no such task), not a missing route.
        """
        path = f"/host/wopeval/runs/{ids.project(run_id)}/tasks/{task_id}"
        from wopeval.wire.task_detail import TaskDetail

        return self._read(TaskDetail, "task details", "GET", path)

    def invocations(self, run_id: str) -> InvocationList | None:
        """Every invocation of the run that ended; None when the host has no such route."""
        body = self._optional("GET", f"/host/wopeval/runs/{ids.project(run_id)}/invocations")
        from wopeval.wire.invocations import InvocationList

        return None if body is None else read_shape(InvocationList, body, "invocations")

    def invocation_stderr(self, run_id: str, invocation_id: str) -> InvocationStderr:
        """What one invocation's agent said (asked only of a host that served `invocations`)."""
        path = f"/host/wopeval/runs/{ids.project(run_id)}/invocations/{invocation_id}/stderr"
        from wopeval.wire.invocations import InvocationStderr

        return self._read(InvocationStderr, "invocations", "GET", path)

    def model_calls(self, run_id: str) -> RunModelCalls | None:
        """Every model exchange of the run; None when the host has no such route."""
        body = self._optional("GET", f"/host/wopeval/runs/{ids.project(run_id)}/model-calls")
        from wopeval.wire.invocations import RunModelCalls

        return None if body is None else read_shape(RunModelCalls, body, "model exchanges")

    # ── plumbing ─────────────────────────────────────────────────────

    def _json(self, method: str, path: str, **kwargs: Any) -> JsonObject:
        return _body(self._send(method, path, **kwargs))

    def _read(self, shape: type[Shape], what: str, method: str, path: str, **kwargs: Any) -> Shape:
        return read_shape(shape, self._json(method, path, **kwargs), what)

    def _optional(self, method: str, path: str) -> JsonObject | None:
        try:
            return self._json(method, path)
        except HostError as exc:
            # How hosts say "no such route": 404 (gated operations, versioning.md), 405, 501.
            if exc.status in _NOT_SERVED:
                return None
            raise

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise Unreachable(
                f"cannot reach the host at {self.base_url}: {exc or type(exc).__name__}.\n"
                "  Is `wopeval serve` running there? Check --url (or WOPEVAL_URL), or drop it "
                "to start an embedded host."
            ) from exc
        if response.status_code >= 400:
            raise _host_error(response)
        return response


def _body(response: httpx.Response) -> JsonObject:
    try:
        body = response.json()
    except ValueError as exc:
        raise HostError(response.status_code, "not_json", "the host did not answer JSON") from exc
    if not isinstance(body, dict):
        raise HostError(response.status_code, "not_an_object", "the host answered a non-object")
    return cast(JsonObject, body)


def _host_error(response: httpx.Response) -> HostError:
    """The error envelope `{error, message, details?}` (errors.md), or the bare status."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        message = body.get("message")
        return HostError(
            response.status_code, body["error"], message if isinstance(message, str) else ""
        )
    return HostError(response.status_code, "http_error", response.reason_phrase or "error")


Shape = TypeVar("Shape", bound=BaseModel)


def read_shape(shape: type[Shape], body: JsonObject, what: str) -> Shape:
    """`body` read as `shape`, or a ClientError naming each problem (`what`: what the host sent)."""
    try:
        return shape.model_validate(body)
    except ValidationError as exc:
        problems = "; ".join(f"{error_pointer(e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ClientError(
            f"the host's {what} are not a shape this client reads: {problems}"
        ) from None
