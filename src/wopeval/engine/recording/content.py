"""What of an agent's content may leave the host: the one place `wireContent` is applied.

The host records everything internally (the as-executed record, trial details,
exceptions). What it shows — on events, in task details, in failure messages,
and so in the UI and reports built on them — follows the agent's
`wireContent`: `full` shows content, `hash` shows hashes, names, statuses and
counts only. Tracebacks never leave the host.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import JsonValue

from wopeval import evals
from wopeval.agents import WireContent
from wopeval.engine.recording.models import exchange_detail
from wopeval.engine.runlog.steps import timestamp
from wopeval.store import InvocationSaid, ModelCallRow, StoredInvocation, StoredTrial
from wopeval.wire import events, json_text
from wopeval.wire.invocations import (
    InvocationError,
    InvocationLine,
    InvocationStderr,
    RunModelCall,
)
from wopeval.wire.task_detail import (
    AgentErrorView,
    ClosestEntry,
    CriterionView,
    GradeView,
    JudgeView,
    MissView,
    ModelCallView,
    PathChange,
    ServedAs,
    ToolChange,
    TraceCall,
    TrialDetail,
)


def tool_called(
    agent_id: str,
    tool: str,
    call_id: str,
    args: JsonValue,
    mode: WireContent,
    args_text: bytes | None = None,
) -> events.Built:
    """`agent.tool-called`'s payload (`events.ToolCalled`, as its `to_wire` writes it);
    `args_text`, when given, is `args` as written already (`json_text.written`), put in the
    event document as it is (`json_text.embedded`)."""
    wire: dict[str, Any] = {"agentId": agent_id, "toolName": tool, "callId": call_id}
    if mode != "full":
        wire["argsHash"] = evals.args_hash(args)
    elif args is not None:
        wire["inputs"] = args if args_text is None else json_text.embedded(args_text)
    return events.Built(events.ToolCalled.TYPE, wire)


def tool_returned(
    agent_id: str,
    tool: str,
    call_id: str,
    status: events.ToolStatus,
    result: JsonValue,
    error: dict[str, Any] | None,
    duration_ms: int | None,
    mode: WireContent,
    result_text: bytes | None = None,
) -> events.Built:
    """`agent.tool-returned`'s payload (`events.ToolReturned`, as its `to_wire` writes it);
    a tool's error, which came from outside, is still checked as `events.ToolError`.
    `result_text`, when given, is `result` as written already, put in as `tool_called`'s
    `args_text` is."""
    full = mode == "full"
    wire: dict[str, Any] = {
        "agentId": agent_id,
        "toolName": tool,
        "callId": call_id,
        "status": status,
    }
    if full and status == "ok" and result is not None:
        wire["outcome"] = result if result_text is None else json_text.embedded(result_text)
    if error and full:
        wire["error"] = events.ToolError(**error).to_wire()
    if duration_ms is not None:
        wire["durationMs"] = duration_ms
    return events.Built(events.ToolReturned.TYPE, wire)


def agent_failure(agent_id: str, error: dict[str, Any] | None, mode: WireContent) -> str:
    """The message of a failure the agent caused: its exception's type, and message if `full`."""
    if error is None:
        return f"agent {agent_id} failed"
    if mode == "full" and error.get("message"):
        return f"agent {agent_id} raised {error['type']}: {error['message']}"
    return f"agent {agent_id} raised {error['type']}"


def trial_view(stored: StoredTrial, source_model_calls: int | None = None) -> TrialDetail:
    """A recorded trial as the caller may see it; `source_model_calls` are the model
    exchanges its task's fixture source made (None: it has none)."""
    detail = stored.detail
    full = stored.wire_content == "full"
    calls = [_call_view(call, full) for call in detail["calls"]]
    return TrialDetail(
        trial=stored.trial,
        passed=stored.passed,
        reason=reason_line(detail, full, source_model_calls),
        durationMs=detail["durationMs"],
        decision=detail.get("decision") if full else None,
        decisionHash=evals.args_hash(detail["decision"]) if "decision" in detail else None,
        expected=detail.get("expected"),
        grade=_grade_view(detail, full),
        calls=calls,
        misses=[_miss_view(miss, detail["calls"], full) for miss in detail["misses"]],
        error=_error_view(detail.get("error"), full),
        stderr=detail.get("stderr") if full else None,
        modelCalls=[
            ModelCallView(**_model_call_fields(exchange, full))
            for exchange in detail.get("modelCalls", [])
        ],
        costUsd=detail.get("costUsd"),
        contentErased=stored.erased,
    )


def reason_line(detail: dict[str, Any], full: bool, source_model_calls: int | None = None) -> str:
    """Why a trial failed (`_failure_line`), followed by what it did not do that its source
    did: a model it never asked (evals/_idle.py)."""
    line = _failure_line(detail, full)
    own_exchanges = sum(not exchange["delegate"] for exchange in detail.get("modelCalls", []))
    missing = evals.missing_model_calls(source_model_calls, own_exchanges)
    return line if missing is None else f"{line}; {missing}"


def _failure_line(detail: dict[str, Any], full: bool) -> str:
    """Why a trial failed, first cause first: tools that changed under `tools_changed =
    "fail"` (the agent never ran), a model replay miss or a fixture miss (where the changed
    agent left its recording; an agent that raises on the miss's error raised because of
    it), the agent's exception, then the grade."""
    tools_changed = detail.get("toolsChanged")
    if tools_changed:
        changes = [ToolChange.model_validate(change) for change in tools_changed]
        return (
            "not run: its MCP tools changed since the recording (tools_changed = fail): "
            + evals.describe_tool_changes(changes)
        )
    model_misses = [e for e in detail.get("modelCalls", []) if e["servedBy"] == "miss"]
    if model_misses:
        more = f" (and {len(model_misses) - 1} more)" if len(model_misses) > 1 else ""
        first = model_misses[0]
        # What the miss came nearest, and the paths that differ (no content).
        nearest = (first.get("error") or {}).get("nearestReason")
        return (
            f"model replay miss: the source run made no request like model exchange "
            f"{first['index']}{more}; nothing reached the model"
            + (f"; {nearest}" if nearest else "")
        )
    misses = detail["misses"]
    if misses:
        first = misses[0]
        more = f" (and {len(misses) - 1} more)" if len(misses) > 1 else ""
        if full and "reason" in first:
            return f"fixture miss: {first['reason']}{more}"
        return f"fixture miss: a call to {first['tool']} no recording serves{more}"
    error = detail.get("error")
    if error is not None:
        if full and error.get("message"):
            return f"the agent raised {error['type']}: {error['message']}"
        return f"the agent raised {error['type']}"
    grade = detail.get("grade")
    if grade is None or grade["passed"]:
        return "passed"
    return str(grade["reason"]) if full else _content_free_reason(detail.get("expected"))


def _content_free_reason(expected: Any) -> str:
    if isinstance(expected, dict) and expected.get("kind") == "rubric":
        return "the judge's score did not reach its threshold, or it gave none (rubric)"
    if isinstance(expected, dict) and expected.get("kind") == "trajectory":
        return f"the calls did not match the expected trajectory ({expected.get('order')})"
    strategy = (expected or {}).get("match", {}).get("strategy", "exact")
    return f"the decision did not match the expected value ({strategy})"


def _call_view(call: dict[str, Any], full: bool) -> TraceCall:
    error = call.get("error")
    if error is not None and not full:
        error = None
    return TraceCall(
        index=call["index"],
        tool=call["tool"],
        servedBy=call["servedBy"],
        status=call["status"],
        delegate=call["delegate"],
        durationMs=call.get("durationMs"),
        inputs=call.get("inputs") if full else None,
        argsHash=call["argsHash"],
        outcome=call.get("outcome") if full else None,
        error=error,
    )


def run_model_call(index: int, row: ModelCallRow, mode: WireContent | None) -> RunModelCall:
    """A run's exchange as the caller may see it, as a trial's detail shows it; `mode` is its
    agent's `wireContent` now (None: a judge's, or an agent the host no longer has)."""
    exchange = {"index": index, **exchange_detail(row, row.request, row.response)}
    return RunModelCall(
        invocationId=row.invocation_id, **_model_call_fields(exchange, mode == "full")
    )


def _model_call_fields(exchange: dict[str, Any], full: bool) -> dict[str, Any]:
    keep = {key: value for key, value in exchange.items() if key not in ("request", "response")}
    if full:
        keep["request"] = exchange.get("request")
        keep["response"] = exchange.get("response")
    error = exchange.get("error")
    if not full and isinstance(error, dict) and "diff" in error:
        # A miss's diff holds the request's content: its paths only.
        diff = [{"path": c["path"], "kind": c["kind"]} for c in error["diff"]]
        keep["error"] = {**error, "diff": diff}
    return keep


def _miss_view(miss: dict[str, Any], calls: list[dict[str, Any]], full: bool) -> MissView:
    closest = miss.get("closestIndex")
    return MissView(
        callIndex=miss["callIndex"],
        tool=miss["tool"],
        argsHash=calls[miss["callIndex"]]["argsHash"],
        closest=None
        if closest is None
        else ClosestEntry(entryIndex=closest, args=miss.get("closestArgs") if full else None),
        diff=[PathChange(**change) for change in miss.get("diff") or []] if full else None,
        consumedForTool=miss.get("consumedForTool", 0),
    )


def _grade_view(detail: dict[str, Any], full: bool) -> GradeView | None:
    grade = detail.get("grade")
    if grade is None:
        return None
    judge = _judge_view(grade.get("judge"), full)
    if not full:
        reason = "passed" if grade["passed"] else _content_free_reason(detail.get("expected"))
        return GradeView(passed=grade["passed"], score=grade["score"], reason=reason, judge=judge)
    return GradeView(
        passed=grade["passed"],
        score=grade["score"],
        reason=grade["reason"],
        diff=[PathChange(**change) for change in grade.get("diff") or []] or None,
        traceback=grade.get("traceback"),
        judge=judge,
    )


def _judge_view(judge: dict[str, Any] | None, full: bool) -> JudgeView | None:
    """A rubric trial's judge part; without `full`, the judge's words stay in the host (they
    may quote the output under judgement)."""
    if judge is None:
        return None
    criteria = [
        CriterionView(**{**criterion, "reason": criterion["reason"] if full else None})
        for criterion in judge["criteria"]
    ]
    unjudged = judge.get("unjudged")
    return JudgeView(
        judgeId=judge["judgeId"],
        digest=judge["digest"],
        gate=judge["gate"],
        criteria=criteria,
        unjudged=None if unjudged is None else unjudged if full else "no judgement",
    )


def _error_view(error: dict[str, Any] | None, full: bool) -> AgentErrorView | None:
    if error is None:
        return None
    if not full:
        return AgentErrorView(type=error["type"])
    return AgentErrorView(type=error["type"], message=error.get("message"))


def invocation_line(stored: StoredInvocation, mode: WireContent | None) -> InvocationLine:
    """A stored invocation as the caller may see it; `mode` is its agent's `wireContent` now
    (None: the host no longer has the agent, so nothing it said is shown)."""
    full = mode == "full"
    error = stored.error
    said: Literal["kept", "withheld"] | None = None
    if stored.said_something:
        said = "kept" if full else "withheld"
    return InvocationLine(
        invocationId=stored.invocation_id,
        agentId=stored.agent_id,
        delegate=stored.is_delegate,
        nodeId=stored.node_id,
        taskId=stored.task_id,
        trial=stored.trial,
        outcome="failed" if stored.outcome == "failed" else "completed",
        startedAt=timestamp(stored.started_at),
        completedAt=timestamp(stored.completed_at),
        error=None
        if error is None
        else InvocationError(type=error["type"], message=error.get("message") if full else None),
        idle=stored.idle,
        stderr=said,
    )


def invocation_stderr(
    run_id: str, said: InvocationSaid, mode: WireContent | None
) -> InvocationStderr:
    """What an invocation's agent said, when its `wireContent` lets it leave the host."""
    full = mode == "full"
    return InvocationStderr(
        runId=run_id,
        invocationId=said.invocation_id,
        agentId=said.agent_id,
        stderr=said.stderr if full else None,
        withheld=not full and said.stderr is not None,
    )


@dataclass(frozen=True)
class BoundaryCall:
    """One recorded tool call as the caller may see it (the dashboard's tool table)."""

    sequence: int
    """The sequence of its `agent.tool-called` in the run."""
    agent_id: str
    delegate: bool
    tool: str
    call_id: str
    served_by: ServedAs
    status: str
    duration_ms: int | None
    args_hash: str
    inputs: JsonValue = None
    """The args as the agent passed them (`full` only)."""
    outcome: JsonValue = None
    """The result (`full`, status `ok`)."""
    error: dict[str, JsonValue] | None = None
    """The tool error (`full` only)."""
    content_shown: bool = False
    """Whether the content above may be shown; else only its shape is."""


def boundary_call(
    call: evals.RecordedCall, called: dict[str, Any] | None, mode: WireContent
) -> BoundaryCall:
    """A recorded call as its own `agent.tool-called` event (`called`, its payload) showed it.

    Content is shown only where that event carried the args (it went out under
    `full` and was not erased since) and the agent's `wireContent` is still
    `full` (`mode`): never more than the wire showed, never more than the agent
    allows now.
    """
    called = called or {}
    error = call.error or {}
    served: ServedAs = "miss" if error.get("code") == "fixture_miss" else call.served_by
    shown = mode == "full" and "callId" in called and "argsHash" not in called
    return BoundaryCall(
        sequence=call.sequence,
        agent_id=call.agent_id,
        delegate=call.is_delegate,
        tool=call.tool,
        call_id=call.call_id,
        served_by=served,
        status=call.status,
        duration_ms=call.duration_ms,
        # The event's own hash once it went out (or was scrubbed) as one; else of its args.
        args_hash=called.get("argsHash") or evals.args_hash(called.get("inputs")),
        inputs=call.inputs if shown else None,
        outcome=call.result if shown and call.status == "ok" else None,
        error=call.error if shown else None,
        content_shown=shown,
    )
