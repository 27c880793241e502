"""`wopeval demo` end to end: record production runs, replay them to v1 and v2, compare.

1. Start the loopback CRM and an embedded host with the demo project (agent v1).
2. Run the `support-triage` workflow on the suite's five customer cases: the
   "production" runs, whose tool calls the host records as executed.
3. Baseline eval (v1): each task takes its fixtures from its production run
   (RFC 0252 `fixtureRuns`), modes `golden`.
4. Change the agent: stop the host, point `support-agent` (the same agentId,
   as RFC 0252 §C requires of the sources) at v2, start it again.
5. Candidate eval (v2): the same `fixtureRuns`, `baselineRunId` = the v1 eval,
   modes `golden` + `regression` (RFC 0251).
6. Count the tool calls that reached a live tool during the replays (must be 0),
   and write the HTML report.

Everything goes over the wire to the embedded host; nothing here prints (the
caller narrates through `on_step`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from wopeval import client
from wopeval.demo.crm import CrmService
from wopeval.reports import RunWhy, html_report
from wopeval.wire.summary import EvalSummary, Verdict

AGENT_ID = "support-agent"
WORKFLOW_ID = "support-triage"
SUITE_FILE = "suites/support-triage.json"
CRM_URL_PLACEHOLDER = "http://127.0.0.1:8799/crm"
CRM_TOKEN_ENV = "DEMO_CRM_TOKEN"
AGENT_V1 = "wopeval.demo.project.agent_v1:decide"
AGENT_V2 = "wopeval.demo.project.agent_v2:decide"
EXPECTED_REGRESSION = "plan-change"
"""The one case v2 gets wrong (see agent_v2.py); the demo checks it found exactly that."""
RUN_DEADLINE_SECONDS = 60.0


@dataclass
class DemoResult:
    data_dir: Path
    report_path: Path
    baseline_run_id: str
    candidate_run_id: str
    baseline: EvalSummary
    candidate: EvalSummary
    live_calls: int | None
    crm_requests_in_production: int
    crm_requests_in_replay: int
    why: RunWhy | None = None
    """The candidate's task lines and details, as the host's task routes gave them."""
    problems: list[str] = field(default_factory=list)
    """Why the demo did not run as designed; empty when it did."""

    @property
    def as_designed(self) -> bool:
        return not self.problems


def run_demo(
    data_dir: Path,
    report_path: Path,
    *,
    on_step: Callable[[str], None] = lambda _: None,
    database_url: str | None = None,
) -> DemoResult:
    """The demo on `data_dir` (its SQLite default, or the database at `database_url`)."""
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # private, as a host makes it
    project_dir = data_dir / "project"
    suite = _suite_document()
    suite_ref = f"{suite['suiteId']}@{suite['version']}"
    with CrmService() as crm, _environment(CRM_TOKEN_ENV, crm.token):
        on_step(f"CRM service on {crm.url} (bearer credential held by the host, not the agent)")
        _materialize(project_dir, crm.url, AGENT_V1)
        with _host(data_dir, project_dir, database_url) as (embedded, host):
            on_step(f"Host started in-process on {embedded.base_url} (data in {data_dir})")
            production = _production_runs(host, suite)
            crm_production = crm.requests_served
            on_step(
                f"Production: {len(production)} runs of {WORKFLOW_ID} with {AGENT_ID} v1 "
                f"(the CRM served {crm_production} requests)"
            )
            baseline_id = _eval(
                host, client.EvalRequest(suite_ref, AGENT_ID, ("golden",), fixture_runs=production)
            )
            baseline = client.fetch_summary(host, baseline_id)
            on_step(
                f"Baseline eval (v1) replaying those runs: {baseline_id} — "
                f"{baseline.passedCount}/{baseline.taskCount} tasks passed"
            )
            live_baseline = host.live_calls(baseline_id)
        _materialize(project_dir, crm.url, AGENT_V2)
        on_step(f"Changed the agent: {AGENT_ID} now runs {AGENT_V2}; host restarted")
        with _host(data_dir, project_dir, database_url) as (embedded, host):
            candidate_id = _eval(
                host,
                client.EvalRequest(
                    suite_ref,
                    AGENT_ID,
                    ("golden", "regression"),
                    baseline_run_id=baseline_id,
                    fixture_runs=production,
                ),
            )
            candidate = client.ensure_verdict(host, client.fetch_summary(host, candidate_id))
            on_step(f"Candidate eval (v2) against baseline {baseline_id}: {candidate_id}")
            live_candidate = host.live_calls(candidate_id)
            facts = client.run_facts(host, candidate_id)
            why = client.fetch_why(host, candidate_id)
            if why is not None:
                why = client.with_details(host, why, [t.taskId for t in why.listing.tasks])
        crm_replay = crm.requests_served - crm_production
    live = (
        None if live_baseline is None or live_candidate is None else live_baseline + live_candidate
    )
    generated = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    report_path.parent.mkdir(parents=True, exist_ok=True)
    document = html_report(candidate, facts, generated_at=generated, why=why)
    report_path.write_text(document, encoding="utf-8")
    result = DemoResult(
        data_dir=data_dir,
        report_path=report_path,
        baseline_run_id=baseline_id,
        candidate_run_id=candidate_id,
        baseline=baseline,
        candidate=candidate,
        live_calls=live,
        crm_requests_in_production=crm_production,
        crm_requests_in_replay=crm_replay,
        why=why,
    )
    result.problems = _problems(result)
    return result


def _problems(result: DemoResult) -> list[str]:
    """What would make the demo's story false; each is a bug, not an expected outcome."""
    problems: list[str] = []
    if not result.baseline.passed or result.baseline.passedCount != result.baseline.taskCount:
        problems.append("the v1 baseline did not pass every task")
    regression = result.candidate.regression
    paired = (regression.tasks or []) if regression else []
    regressed = [t.taskId for t in paired if t.verdict is Verdict.REGRESSED]
    if regression is None or regression.verdict is not Verdict.REGRESSED:
        problems.append("the paired verdict is not 'regressed'")
    if regressed != [EXPECTED_REGRESSION]:
        problems.append(f"expected only {EXPECTED_REGRESSION!r} to regress, got {regressed}")
    if result.baseline.fixtureMissCount or result.candidate.fixtureMissCount:
        problems.append("a replay missed its recorded fixtures")
    if result.live_calls != 0:
        problems.append(f"the replays made {result.live_calls} live tool calls")
    if result.crm_requests_in_replay != 0:
        problems.append(f"the CRM was called {result.crm_requests_in_replay} times in replay")
    return problems


def _suite_document() -> dict[str, Any]:
    text = resources.files("wopeval.demo.project").joinpath(SUITE_FILE).read_text("utf-8")
    document: dict[str, Any] = json.loads(text)
    return document


def _materialize(project_dir: Path, crm_url: str, agent_callable: str) -> None:
    """Write the demo project into the data dir with the live CRM URL and the chosen agent."""
    source = resources.files("wopeval.demo.project")
    manifest = source.joinpath("wopeval.toml").read_text("utf-8")
    if CRM_URL_PLACEHOLDER not in manifest or AGENT_V1 not in manifest:
        raise RuntimeError("the demo project's wopeval.toml has changed shape")
    manifest = manifest.replace(CRM_URL_PLACEHOLDER, crm_url).replace(AGENT_V1, agent_callable)
    for folder in ("workflows", "suites"):
        target = project_dir / folder
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for entry in source.joinpath(folder).iterdir():
            if entry.name.endswith(".json"):
                (target / entry.name).write_text(entry.read_text("utf-8"), encoding="utf-8")
    (project_dir / "wopeval.toml").write_text(manifest, encoding="utf-8")


@contextlib.contextmanager
def _host(
    data_dir: Path, project_dir: Path, database_url: str | None
) -> Iterator[tuple[client.EmbeddedHost, client.WireClient]]:
    settings = client.embedded_settings(
        data_dir=data_dir, project=project_dir, database_url=database_url
    )
    with (
        # The demo leaves the `dev` key its docs say to sign in to the dashboard with.
        client.EmbeddedHost(settings, leave_dev_key=True) as embedded,
        embedded.client() as host,
    ):
        yield embedded, host


@contextlib.contextmanager
def _environment(name: str, value: str) -> Iterator[None]:
    """Set one variable for the block: the project reads the CRM token from it at load."""
    previous = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous


def _production_runs(host: client.WireClient, suite: dict[str, Any]) -> dict[str, str]:
    """One workflow run per suite case, on the case's input; task id → run id."""
    runs = {
        task["taskId"]: host.create_run({"workflowId": WORKFLOW_ID, "inputs": task["input"]}).runId
        for task in suite["tasks"]
    }
    for run_id in runs.values():
        client.require_completed(
            host, client.follow(host, run_id, deadline_seconds=RUN_DEADLINE_SECONDS)
        )
    return runs


def _eval(host: client.WireClient, request: client.EvalRequest) -> str:
    client.require_eval_capabilities(host, request)
    run_id = host.create_run(request.body()).runId
    watch = client.follow(
        host, run_id, agent_id=request.agent_id, deadline_seconds=RUN_DEADLINE_SECONDS
    )
    client.require_completed(host, watch)
    return run_id
