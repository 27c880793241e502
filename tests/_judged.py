"""An in-process host with a project judge, for the tests of a judge source's copies.

The judge speaks Chat Completions to the strict local model server; the suite has one
rubric task, whose answer the scripted agent gives. `judged_source` runs that suite once,
live: the judge's exchange is recorded, and the run is a judge source for later evals
(`judgeSourceRunId`), which copy its judgements (`eval_plan.JUDGE_COPY`).
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from _backends import Backend
from _hosts import TENANT, running_host
from _model_server import ModelServer
from wopeval.engine.runlog.log_writer import OnInsert
from wopeval.hosting.host import Host
from wopeval.store import RunRecord
from wopeval.wire.principal import Principal
from wopeval.wire.runs import CreateRunRequest, RunStatus

PRINCIPAL = Principal(TENANT, "key-test")
JUDGE_ID = "copies.judge"
_KEY_ENV = "JUDGED_TEST_JUDGE_KEY"
_PHRASE = "You are the judge of the copies' tests."
_AGENT = "conformance.scripted-agent"


@dataclass(frozen=True)
class JudgedProject:
    host: Host
    suite_ref: str

    def request(self, judge_source: str) -> CreateRunRequest:
        """An eval of the rubric suite whose judgements come from `judge_source`."""
        extension = {"judgeSourceRunId": judge_source}
        return CreateRunRequest(
            mode="eval",
            evalSuiteRef=self.suite_ref,
            agentId=_AGENT,
            configurable={"version": 1, "extensions": {"wopeval": extension}},
        )

    async def evaluate(
        self, request: CreateRunRequest, on_insert: OnInsert | None = None
    ) -> RunRecord:
        return await self.host.engine.create_eval_run(PRINCIPAL, request, on_insert=on_insert)

    async def judged_source(self) -> str:
        """A finished eval run whose one trial the judge graded live."""
        record = await self.evaluate(
            CreateRunRequest(mode="eval", evalSuiteRef=self.suite_ref, agentId=_AGENT)
        )
        await self.host.engine.wait_idle()
        finished = await self.host.engine.get_run(PRINCIPAL, record.run_id)
        assert finished.status is RunStatus.COMPLETED
        return record.run_id


def _write_project(directory: Path, model_url: str) -> Path:
    prompt = _PHRASE + " Task: $input\\nCriteria:\\n$criteria\\nScore each $scale."
    (directory / "wopeval.toml").write_text(
        f"""[[judges]]
id = "{JUDGE_ID}"
model = "judge-mini"
api = "chat"
base_url = "{model_url}"
api_key_env = "{_KEY_ENV}"
prompt = "{prompt}"
scale = 4
threshold = 0.5
retries = 0
"""
    )
    return directory


@asynccontextmanager
async def judged_project(backend: Backend, tmp_path: Path) -> AsyncIterator[JudgedProject]:
    """The host, its judge's model server and a published one-task rubric suite."""
    answer = f"Refunds within 30 days ({uuid.uuid4().hex[:8]})."
    (tmp_path / "project").mkdir()
    with ModelServer() as server, pytest.MonkeyPatch.context() as patch:
        patch.setenv(_KEY_ENV, "sk-judge-" + secrets.token_hex(16))
        project = _write_project(tmp_path / "project", server.base_url)
        verdict = {"criteria": [{"criterion": 1, "score": 4, "reason": "cites the window"}]}
        server.script.add(answer, [{"json": verdict}], system_contains=_PHRASE)
        async with running_host(backend, tmp_path / "data", project=project) as host:
            task = {
                "taskId": "refund",
                "input": {"calls": [], "answer": answer},
                "expected": {"kind": "rubric", "rubric": [{"criterion": "cites", "weight": 1}]},
            }
            suite = {
                "suiteId": f"copies-{uuid.uuid4().hex[:8]}.evals.judged",
                "version": "1.0.0",
                "modes": ["rubric"],
                "tasks": [task],
                "targetAgentId": _AGENT,
            }
            await host.engine.publish_suite(PRINCIPAL, suite)
            yield JudgedProject(host, f"{suite['suiteId']}@1.0.0")
