"""Golden event logs (G7): what the host puts on the wire for three reference runs.

Each log is read back from the store, its volatile values (ids, clocks,
durations) replaced by stable placeholders, and compared with the JSON file
beside this test, on SQLite and PostgreSQL alike. A change to any event's shape
or order shows up here as a diff to review; regenerate the files with
`UPDATE_GOLDEN_LOGS=1 pytest tests/engine/test_golden_logs.py` once it is intended.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from _backends import Backend
from _handles import handle_of
from _hosts import TENANT, running_host
from wopeval.hosting.host import Host
from wopeval.wire.principal import Principal
from wopeval.wire.runs import CreateRunRequest

GOLDEN = Path(__file__).with_name("golden")
AGENT = "conformance.scripted-agent"
COUNTER = "conformance.eval:counter"
SCRIPT = {
    "calls": [
        {"tool": COUNTER, "args": {"op": "inc", "key": "conformance-recorded"}},
        {"tool": COUNTER, "args": {"op": "read", "key": "conformance-recorded"}},
    ],
    "answer": "done",
}
# Ids that differ on every run: each distinct value becomes `<kind-N>` in order of
# appearance, so a call's return still has to name the same callId as the call.
VOLATILE = {
    "eventId": "event",
    "runId": "run",
    "callId": "call",
    "invocationId": "invocation",
    "subjectId": "subject",
    "baselineRunId": "run",
}
# Clocks and durations: only their presence is part of the contract.
CLOCKS = frozenset({"timestamp", "durationMs", "latencyMs"})


class Normaliser:
    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], str] = {}

    def placeholder(self, kind: str, value: Any) -> str:
        key = (kind, json.dumps(value))
        if key not in self._seen:
            count = sum(1 for seen_kind, _ in self._seen if seen_kind == kind)
            self._seen[key] = f"<{kind}-{count}>"
        return self._seen[key]

    def __call__(self, value: Any, key: str | None = None) -> Any:
        if key in VOLATILE:
            return self.placeholder(VOLATILE[key], value)
        if key in CLOCKS:
            return f"<{key}>"
        if key == "fixtureRuns" and isinstance(value, dict):
            return {task: self.placeholder("run", run) for task, run in value.items()}
        if isinstance(value, dict):
            return {k: self(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self(item) for item in value]
        return value


async def _log(host: Host, run_id: str, normalise: Normaliser) -> list[Any]:
    async with host.store.reading() as uow:
        docs = await uow.events.all_docs(await handle_of(uow, run_id))
    return [normalise(json.loads(doc)) for doc in docs]


async def _run(host: Host, request: CreateRunRequest) -> str:
    principal = Principal(TENANT, "key-golden")
    if request.mode == "eval":
        record = await host.engine.create_eval_run(principal, request)
    else:
        record = await host.engine.create_workflow_run(principal, request)
    await host.engine.wait_idle()
    return record.run_id


async def workflow_run(host: Host) -> list[str]:
    return [
        await _run(host, CreateRunRequest(workflowId="conformance-agent-counter", inputs=SCRIPT))
    ]


async def recorded_replay(host: Host) -> list[str]:
    source = await _run(
        host, CreateRunRequest(workflowId="conformance-agent-counter", inputs=SCRIPT)
    )
    replay = await _run(
        host,
        CreateRunRequest(
            mode="eval",
            evalSuiteRef="conformance-eval-recorded-replay",
            agentId=AGENT,
            fixtureRuns={"record": source},
        ),
    )
    return [source, replay]


async def regression_pair(host: Host) -> list[str]:
    base = await _run(
        host,
        CreateRunRequest(
            mode="eval", evalSuiteRef="conformance-eval-regression-base", agentId=AGENT
        ),
    )
    candidate = await _run(
        host,
        CreateRunRequest(
            mode="eval",
            evalSuiteRef="conformance-eval-regression-candidate",
            agentId=AGENT,
            evalModes=["golden", "regression"],
            baselineRunId=base,
        ),
    )
    return [base, candidate]


SCENARIOS: dict[str, Callable[[Host], Awaitable[list[str]]]] = {
    "workflow-run": workflow_run,
    "recorded-replay": recorded_replay,
    "regression-pair": regression_pair,
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_event_logs_match_their_golden_files(
    backend: Backend, tmp_path: Path, name: str
) -> None:
    async def scenario() -> list[list[Any]]:
        async with running_host(backend, tmp_path) as host:
            normalise = Normaliser()
            return [await _log(host, run, normalise) for run in await SCENARIOS[name](host)]

    logs = asyncio.run(scenario())
    golden = GOLDEN / f"{name}.json"
    if os.environ.get("UPDATE_GOLDEN_LOGS") == "1":
        golden.write_text(json.dumps(logs, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    assert logs == json.loads(golden.read_text(encoding="utf-8"))
