"""One model exchange has one number wherever it is shown: its place among the trial's model
exchanges, from 0 (docs/decisions.md). A delegate's exchange came first, so the agent's own
first exchange is the trial's exchange 1 while it is its invocation's exchange 0: the replay
miss the agent is told of, the miss as recorded, the task's reason line and the task detail
(what `explain`, the reports and the dashboard number `#1`) all call it 1."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import JsonValue

from wopeval import evals, models
from wopeval.engine.eval_runs.trial_detail import trial_row
from wopeval.engine.recording.content import trial_view
from wopeval.engine.recording.invocation import InvocationResult
from wopeval.engine.recording.models import ModelLedger, ModelRecorder, ModelServer
from wopeval.engine.runlog.runlog import Journal
from wopeval.models import LiveAnswer, ModelAnswer
from wopeval.store import StoredTrial
from wopeval.wire.suite import Task

from ._store import open_run, open_store, writer_for

RECORDED: dict[str, JsonValue] = {"model": "claude", "max_tokens": 8, "messages": []}
MESSAGE: dict[str, JsonValue] = {"type": "message", "content": [], "model": "claude-1"}


async def test_a_model_exchange_has_one_number_in_every_place_it_is_shown(
    tmp_path: Path,
) -> None:
    fixture = evals.ModelFixture(
        evals.model_request_hash(RECORDED), MESSAGE, "messages", RECORDED, 0
    )
    ledger = ModelLedger()
    async with open_store(tmp_path) as store:
        journal = Journal(await open_run(writer_for(store)))

        def recorder(agent_id: str, delegate: bool, replay: ModelServer | None) -> ModelRecorder:
            return ModelRecorder(
                agent_id=agent_id,
                record_model=True,
                invocation_id=f"inv-{agent_id}",
                is_delegate=delegate,
                journal=journal,
                ledger=ledger,  # one trial: the agent's and its delegate's exchanges
                prices={},
                replay=replay,
            )

        async def answered() -> LiveAnswer:
            return LiveAnswer(ModelAnswer(MESSAGE))

        helper = recorder("helper", True, None)
        await helper.call(models.MESSAGES.parse(RECORDED), answered)
        agent = recorder("agent", False, ModelServer(evals.ModelReplayCursor([fixture])))
        with pytest.raises(models.ModelReplayMiss) as missed:
            await agent.call(models.MESSAGES.parse({**RECORDED, "max_tokens": 9}), answered)
        await journal.flush()

    told = str(missed.value)  # what the agent (or its client) was answered
    assert "(model exchange 1); nearest recorded request: exchange 0" in told
    task = Task.model_validate({"taskId": "t", "input": {}, "expected": {"kind": "golden",
                                "match": {"strategy": "exact", "value": "x"}}})  # fmt: skip
    row = trial_row(
        task,
        0,
        passed=False,
        result=InvocationResult(None, True, models=ledger),
        grade=None,
        duration_ms=1,
        wire_content="full",
    )
    shown = trial_view(StoredTrial("t", 0, False, "full", row.detail, erased=False))
    assert [(call.index, call.agentId, call.servedBy) for call in shown.modelCalls] == [
        (0, "helper", "live"),
        (1, "agent", "miss"),
    ]
    assert shown.reason.startswith(
        "model replay miss: the source run made no request like model exchange 1; "
    )
    error = shown.modelCalls[1].error
    assert error is not None
    assert str(error["reason"]).startswith(
        "model replay: the source run made no request like this one (model exchange 1); "
    )
