"""One conversation with the host under test, over the wire only.

Everything goes through the official `openwop-client` (2.7.0) except what it
cannot express, which goes through raw `httpx` and says why:
- refusals, whose body BYTES the uniform-refusal legs compare (the SDK hands
  back a decoded string, and it cannot send `fixtureRuns: {}` verbatim);
- `GET …/eval-summary` as JSON, because the SDK's `EvalSummary` drops the host
  additions the legs read (`fixtureMissCount`, `regression.verdict`, …);
- `OpenWOP-Version: 3` (the 406 leg) and the host-proprietary counter route.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx
from openwop_client import CreateRunRequest, OpenwopClient, WopError, project_id

from wopeval.conformance.results import LegBlocked, LegFailed, observed

TERMINAL_EVENTS = ("run.completed", "run.failed", "run.cancelled")
COUNTER_ROUTE = "/host/wopeval/conformance/counter/{key}"
"""wopeval's read-only view of `conformance.eval:counter`; other hosts may not serve it."""


@dataclass(frozen=True, slots=True)
class Target:
    """Where the host is and how to talk to it (the conformance suite's three variables)."""

    base_url: str
    api_key: str
    """OPENWOP_API_KEY: tenant A."""
    tenant_b_api_key: str | None = None
    """OPENWOP_TEST_TENANT_B_API_KEY: a credential of a different tenant."""
    agent_id: str = "conformance.scripted-agent"
    """The agent the eval fixtures target (their `targetAgentId`)."""
    run_timeout: float = 60.0
    """Seconds a run may take to reach a terminal event."""


@dataclass(frozen=True, slots=True)
class RawResponse:
    status: int
    body: bytes
    headers: httpx.Headers

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    @property
    def error_code(self) -> Any:
        decoded = self.json()
        return decoded.get("error") if isinstance(decoded, dict) else None


@dataclass(frozen=True, slots=True)
class Event:
    sequence: int
    type: str
    payload: Any


@dataclass(frozen=True, slots=True)
class CompletedRun:
    """A run awaited to its terminal event, with its whole event log."""

    run_id: str
    events: tuple[Event, ...]

    @property
    def tenant(self) -> str:
        return self.run_id.split("/", 1)[0]

    @property
    def terminal(self) -> str:
        return next(e.type for e in reversed(self.events) if e.type in TERMINAL_EVENTS)

    def payloads(self, event_type: str) -> list[Any]:
        return [e.payload for e in self.events if e.type == event_type]

    def first(self, event_type: str) -> dict[str, Any]:
        found = self.payloads(event_type)
        if not found or not isinstance(found[0], dict):
            raise LegFailed(f"run {self.run_id} has no {event_type} event")
        return found[0]


@dataclass
class Session:
    target: Target
    client_a: OpenwopClient = field(init=False)
    eval_runs: dict[str, CompletedRun] = field(init=False, default_factory=dict)
    """Every eval run awaited so far; the RFC 0081 legs inspect them all."""
    _http: httpx.Client = field(init=False)
    _discovery: dict[str, Any] | None = field(init=False, default=None)
    _counter_served: bool | None = field(init=False, default=None)
    _run_keys: dict[str, str] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.client_a = OpenwopClient(self.target.base_url, self.target.api_key, timeout=60.0)
        # trust_env=False: a proxy variable in the caller's shell must not reroute the probes.
        self._http = httpx.Client(base_url=self.target.base_url, timeout=60.0, trust_env=False)

    def close(self) -> None:
        self._http.close()

    # ── discovery and gating ─────────────────────────────────────────

    def discovery(self) -> dict[str, Any]:
        if self._discovery is None:
            raw = self.client_a.discovery_capabilities().raw
            self._discovery = dict(raw) if isinstance(raw, dict) else {}
        return self._discovery

    def _key(self, tenant_b: bool) -> str:
        if not tenant_b:
            return self.target.api_key
        if not self.target.tenant_b_api_key:
            raise LegBlocked(
                "no tenant-B credential (--tenant-b-api-key / OPENWOP_TEST_TENANT_B_API_KEY)"
            )
        return self.target.tenant_b_api_key

    def client_b(self) -> OpenwopClient:
        """Tenant B's client; blocks the leg when no tenant-B credential was given."""
        return OpenwopClient(self.target.base_url, self._key(True), timeout=60.0)

    # ── runs through the SDK ─────────────────────────────────────────

    def run(self, request: CreateRunRequest, *, tenant_b: bool = False) -> CompletedRun:
        """Create a run (201 expected) as tenant A (or B) and await its terminal event."""
        client = self.client_b() if tenant_b else self.client_a
        try:
            created = client.runs_create(request)
        except WopError as exc:
            raise LegFailed(f"createRun answered {exc.status}: {observed(exc.raw_text)}") from exc
        completed = self.await_run(str(created.runId), client)
        if request.mode == "eval":
            self.eval_runs[completed.run_id] = completed
            self._run_keys[completed.run_id] = self._key(tenant_b)
        return completed

    def await_run(self, run_id: str, client: OpenwopClient) -> CompletedRun:
        """Poll the event log until a terminal run event, within the target's deadline."""
        deadline = time.monotonic() + self.target.run_timeout
        events: list[Event] = []
        after: int | None = None
        while not any(e.type in TERMINAL_EVENTS for e in events):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise LegFailed(
                    f"run {run_id} reached no terminal event within {self.target.run_timeout:g}s"
                )
            wait = max(1, min(30, int(remaining)))
            page = client.runs_poll_events(run_id, after_sequence=after, timeout_seconds=wait)
            for doc in page.events:
                if after is None or int(doc.sequence) > after:
                    events.append(Event(int(doc.sequence), str(doc.type), doc.payload))
            if events:
                after = events[-1].sequence
        return CompletedRun(run_id, tuple(events))

    # ── raw wire ─────────────────────────────────────────────────────

    def _headers(self, key: str | None) -> dict[str, str]:
        headers = {"OpenWOP-Version": "2.0", "Accept": "application/json"}
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def raw_create(self, body: dict[str, Any]) -> RawResponse:
        """`POST /runs` as tenant A with exactly this body.

        Meant for requests the host should refuse. When it accepts one instead, the run is
        awaited here, so it cannot move the live counter under a later leg.
        """
        answer = self._http.post("/runs", json=body, headers=self._headers(self.target.api_key))
        raw = RawResponse(answer.status_code, answer.content, answer.headers)
        created = raw.json()
        if (
            raw.status == 201
            and isinstance(created, dict)
            and isinstance(created.get("runId"), str)
        ):
            # The leg reports the 201 itself; this only keeps later legs clean.
            with contextlib.suppress(LegFailed, WopError):
                self.await_run(created["runId"], self.client_a)
        return raw

    def raw_get(
        self, path: str, *, version: str = "2.0", key: str | None = None, authenticated: bool = True
    ) -> RawResponse:
        headers = self._headers((key or self.target.api_key) if authenticated else None)
        headers["OpenWOP-Version"] = version
        answer = self._http.get(path, headers=headers)
        return RawResponse(answer.status_code, answer.content, answer.headers)

    def summary(self, run_id: str) -> dict[str, Any]:
        """The EvalSummary JSON as served (as the run's own tenant), host additions included."""
        key = self._run_keys.get(run_id, self.target.api_key)
        answer = self.raw_get(f"/runs/{project_id(run_id)}/eval-summary", key=key)
        decoded = answer.json()
        if answer.status != 200 or not isinstance(decoded, dict):
            raise LegFailed(
                f"eval-summary of {run_id} answered {answer.status}: {observed(answer.body)}"
            )
        return decoded

    def counter(self, key: str) -> int | None:
        """Tenant A's live counter value, or None when the host does not serve the route."""
        if self._counter_served is False:
            return None
        answer = self.raw_get(COUNTER_ROUTE.format(key=key))
        decoded = answer.json()
        if answer.status == 200 and isinstance(decoded, dict) and "count" in decoded:
            self._counter_served = True
            return int(decoded["count"])
        if self._counter_served is None and answer.status in (404, 405):
            self._counter_served = False
            return None
        raise LegFailed(f"the counter route answered {answer.status}: {observed(answer.body)}")

    @staticmethod
    def unknown_run_id(tenant: str) -> str:
        """A well-formed id in `tenant` that no host has minted (random 32 hex)."""
        return f"{tenant}/{uuid.uuid4().hex}"
