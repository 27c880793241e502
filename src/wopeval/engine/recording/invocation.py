"""One agent invocation: the bracket events, the context the agent sees, the calls it made."""

from __future__ import annotations

import logging
import traceback
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from pydantic import JsonValue

from wopeval import evals
from wopeval.agents import (
    AgentFailed,
    AgentOutput,
    AgentRegistry,
    AgentSpec,
    NamedBy,
    ToolCallError,
    ToolSpec,
)
from wopeval.engine.recording import content
from wopeval.engine.recording.boundary import Boundary, ToolCall, ToolResult
from wopeval.engine.recording.grants import InvocationGrants
from wopeval.engine.recording.models import ModelLedger, ModelRecorder
from wopeval.engine.recording.tool_names import ToolNames, names_of
from wopeval.engine.runlog.runlog import Journal
from wopeval.engine.runlog.steps import RunClosed, StepNotLanded, now
from wopeval.models import LiveModelCall, ModelAnswer, ModelCallFailed, ModelRequest
from wopeval.store import InvocationRow, ToolCallOutcome, ToolCallRow
from wopeval.tools import Offered, permits
from wopeval.wire import events, ids, json_text

Source = Literal["workflow-node", "run-api", "chat-mention"]
NOT_OFFERED = "tool_not_offered"
log = logging.getLogger("wopeval.agents")


class AgentCrashed(Exception):
    """The agent's own code raised; the invocation ends `failed`."""


@dataclass
class InvocationResult:
    decision: JsonValue
    failed: bool
    executed: list[evals.ExecutedCall] = field(default_factory=list)
    fixture_misses: int = 0
    invoked_agents: set[str] = field(default_factory=set)
    models: ModelLedger = field(default_factory=ModelLedger)
    """The model exchanges of the invocation and its delegates."""
    error: dict[str, Any] | None = None
    """`{type, message, traceback}` when the agent raised (host-only; see content.py)."""
    stderr: str | None = None
    """What the agent said (a command agent's stderr), redacted and bounded (redaction.py)."""
    idle: tuple[evals.IdleReason, ...] = ()
    """Why the completed invocation recorded nothing a replay could test (evals/_idle.py)."""


@dataclass(frozen=True)
class Where:
    """Where an invocation runs, for the host's log and the invocation's record."""

    run_id: str
    task_id: str | None = None
    trial: int | None = None


@dataclass
class Invocation:
    """The AgentContext of one invocation; also collects what it executed."""

    spec: AgentSpec
    input: JsonValue
    journal: Journal
    boundary: Boundary
    agents: AgentRegistry
    where: Where
    node_id: str | None = None
    is_delegate: bool = False
    grants: InvocationGrants[Invocation] | None = None
    """Where the invocation gets its endpoints' capability (None: no endpoint)."""
    shared: InvocationResult = field(
        default_factory=lambda: InvocationResult(decision=None, failed=False)
    )
    invocation_id: str = field(default_factory=ids.mint_local_id)
    _token: str | None = field(default=None, init=False, repr=False)
    _models: ModelRecorder | None = field(default=None, init=False, repr=False)
    _tool_calls: int = field(default=0, init=False)
    _model_proxy_handed: bool = field(default=False, init=False)
    _said: str | None = field(default=None, init=False, repr=False)

    @property
    def agent_id(self) -> str:
        return self.spec.agent_id

    @property
    def mcp_url(self) -> str:
        """This invocation's MCP endpoint; its capability is made on first use, ends with it."""
        return self._grants().url(self._capability())

    @property
    def openai_base_url(self) -> str:
        """This invocation's model proxy (`…/v1`), under the same capability as `mcp_url`."""
        self._model_proxy_handed = True
        return self._grants().openai_base_url(self._capability())

    @property
    def openai_api_key(self) -> str:
        self._model_proxy_handed = True
        return self._capability()

    @property
    def anthropic_base_url(self) -> str:
        """This invocation's Anthropic Messages proxy, under the same capability."""
        self._model_proxy_handed = True
        return self._grants().anthropic_base_url(self._capability())

    @property
    def anthropic_api_key(self) -> str:
        self._model_proxy_handed = True
        return self._capability()

    def keep_output(self, output: AgentOutput) -> None:
        """Redact what the agent said (while its token is still known) and keep its tail."""
        self._said = self.boundary.live.redactor.kept_output(
            output.tail, output.total_bytes, also=self._known_token()
        )

    @property
    def stderr(self) -> str | None:
        """What the agent said, as kept: redacted, its last 16 KiB."""
        return self._said

    def idle(self) -> tuple[evals.IdleReason, ...]:
        """Why this invocation, had it completed, recorded nothing a replay could test."""
        return evals.idle_reasons(
            tool_calls=self._tool_calls,
            model_calls=0 if self._models is None else self._models.exchange_count,
            model_proxy_handed=self._model_proxy_handed,
        )

    def _grants(self) -> InvocationGrants[Invocation]:
        grants = self.grants
        if grants is None:
            raise RuntimeError("this host serves no endpoints for its invocations")
        return grants

    def _capability(self) -> str:
        if self._token is None:
            self._token = self._grants().grant(self.boundary.live.context.tenant, self)
        return self._token

    def offered(self) -> Offered:
        """The tools the agent may call through its MCP endpoint, with their schemas."""
        return self.boundary.offered(self.spec.tools)

    def tool_names(self) -> ToolNames:
        """The provider-safe names the agent is offered its tools by (tool_names.py)."""
        return names_of(self.offered().names())

    def _every_tool(self) -> ToolNames:
        """Offered name → canonical name over every tool of the boundary, granted or not: the
        permission is `call_tool`'s alone, never a side effect of the name lookup."""
        return names_of(self.boundary.offered(None).names())

    def is_mcp_tool(self, name: str) -> bool:
        """Whether the tool offered as `name` is an MCP server's (its result is kept as the
        server gave it)."""
        canonical = self._every_tool().canonical(name)
        listing = None if canonical is None else self.boundary.offered(None).by_name[canonical]
        return listing is not None and listing.server is not None

    def _redacted(self, result: ToolResult) -> ToolResult:
        """A live tool's answer with the project's secrets and this invocation's token cut
        out (an error also loses anything credential-shaped): a tool that echoes what it
        was sent — a server's headers, its environment — leaks no credential into the
        record, an event, the agent or a page (engine/recording/redaction.py)."""
        redactor, also = self.boundary.live.redactor, self._known_token()
        redacted = redactor.redact_known(result.result, also)
        return result._replace(
            result=redacted,
            error=None if result.error is None else redactor.redact_error(result.error, also),
            # The answer's text is the unredacted answer's: kept only if nothing was cut
            # (redaction gives the very same value back only then).
            result_text=result.result_text if redacted is result.result else None,
        )

    def _known_token(self) -> tuple[str, ...]:
        return () if self._token is None else (self._token,)

    def tool_specs(self) -> list[ToolSpec]:
        names = self.tool_names()
        return [
            ToolSpec(name, listing.description, listing.input_schema, names.offered(name))
            for name, listing in self.offered().tools
        ]

    @property
    def models(self) -> ModelRecorder:
        """The invocation's model boundary (the LLM lanes' and the model proxy's)."""
        if self._models is None:
            self._models = ModelRecorder(
                agent_id=self.spec.agent_id,
                record_model=self.spec.record_model,
                invocation_id=self.invocation_id,
                is_delegate=self.is_delegate,
                journal=self.journal,
                ledger=self.shared.models,
                prices=self.boundary.live.prices,
                replay=self.boundary.models,
            )
        return self._models

    async def call_model(self, request: ModelRequest, live: LiveModelCall) -> ModelAnswer:
        return await self.models.call(request, live)

    def revoke(self) -> None:
        """End the MCP endpoint's capability: the invocation is over."""
        grants = self.grants
        if self._token is not None and grants is not None:
            grants.revoke(self._token)
            self._token = None

    async def call_tool(
        self, name: str, args: JsonValue, *, named_by: NamedBy = "canonical"
    ) -> JsonValue:
        """The one door of the tool boundary: served from fixtures, or run live and durable.

        Every lane's calls pass here, so this is where the agent's `tools` allowlist is
        enforced: a tool it is not granted (or a name that is no tool's) is refused with
        `tool_not_offered` before anything runs or is recorded.

        A live call has effects, so its `agent.tool-called` (and its record, status
        `unknown`) lands before the tool runs, and its outcome before the agent
        sees it: a host that dies in between leaves every executed call recorded.
        A fixture's answer has no effect and lands with the rest of the unit.
        The args lose any known secret before anything sees them, and what a live tool
        answers is redacted (`_redacted`) before anything sees it.
        """
        spec = self.spec
        tool = self._every_tool().canonical(name) if named_by == "offered" else name
        if tool is None or not permits(spec.tools, tool):
            message = f"{name} is not offered to agent {spec.agent_id}"
            raise ToolCallError(NOT_OFFERED, message, {"code": NOT_OFFERED, "message": message})
        name = tool
        self._tool_calls += 1
        # The call as the agent made it, the host's alone from here: an agent that reuses
        # its args dict, or a tool that consumes its args, cannot change what was recorded.
        # Less any secret it carries (its own token, a configured credential): the tool and
        # the record get the same args, and a replay's differing token matches as the same.
        copied, args_text = json_text.copy_with_text(args)
        args = self.boundary.live.redactor.redact_known(copied, self._known_token())
        if args is not copied:
            # A secret was cut: the text written while copying is the unredacted args'.
            args_text = None
        call = ToolCall(name, args, ids.mint_local_id(), args_text)
        called = self.journal.emit(
            content.tool_called(
                spec.agent_id, name, call.call_id, args, spec.wire_content, args_text
            ),
            node_id=self.node_id,
        )
        result = self.boundary.served(call)
        if result is not None:
            self.journal.emit(self._returned(call, result), node_id=self.node_id)
            self.journal.record_call(called, self._record_row(call, args_text, result))
        else:
            self.journal.record_call(called, self._record_row(call, args_text, None))
            await self.journal.flush()
            # The tool's own copy of the args, which it may change as it likes.
            tool_args = (
                json_text.copy(args) if args_text is None else json_text.parse_written(args_text)
            )
            result = self._redacted(await self.boundary.live.handle(call._replace(args=tool_args)))
            self.journal.emit(self._returned(call, result), node_id=self.node_id)
            self.journal.complete_call(called, self._outcome(result))
            await self.journal.flush()
        miss = result.miss
        # Positionally, in `ExecutedCall`'s field order: a named tuple built by keyword
        # costs twice as much, on every call.
        self.shared.executed.append(
            evals.ExecutedCall(
                name,
                args,
                self.is_delegate,
                result.status,
                result.result,
                result.error,
                "miss" if miss is not None else result.served_by,
                result.duration_ms,
                miss,
                result.args_hash,
            )
        )
        if miss is not None:
            self.shared.fixture_misses += 1
        if result.status != "ok":
            error = result.error or {}
            raise ToolCallError(str(error.get("code")), str(error.get("message")), error)
        # The agent's own copy: what it does with the answer leaves the record (and a
        # fixture, which serves every trial of its task) as it was.
        if result.result_text is None:
            return json_text.copy(result.result)
        return json_text.parse_written(result.result_text)  # type: ignore[no-any-return]

    async def delegate(self, agent_id: str, input: JsonValue) -> JsonValue:
        spec = self.agents.get(agent_id)
        if spec is None:
            raise AgentCrashed(f"no agent named {agent_id!r} to delegate to")
        child = Invocation(
            spec=spec,
            input=input,
            journal=self.journal,
            boundary=self.boundary,
            agents=self.agents,
            where=self.where,
            node_id=self.node_id,
            is_delegate=True,
            grants=self.grants,
            shared=self.shared,
        )
        outcome = await run_invocation(child, source="run-api")
        if outcome.failed:
            cause = content.agent_failure(agent_id, outcome.error, spec.wire_content)
            raise AgentCrashed(f"delegate {agent_id!r} failed: {cause}")
        return outcome.decision

    def _returned(self, call: ToolCall, result: ToolResult) -> events.Built:
        return content.tool_returned(
            self.spec.agent_id,
            call.tool,
            call.call_id,
            result.status,
            result.result,
            result.error,
            result.duration_ms,
            self.spec.wire_content,
            result.result_text,
        )

    def _record_row(
        self, call: ToolCall, args_text: bytes | None, result: ToolResult | None
    ) -> ToolCallRow:
        """The call's record; `result` None records a live call before its tool runs. Its
        JSON columns are the texts the args and the result were written to already, where
        they were (`args_text`, `result.result_text`)."""
        # With `record` off the call is still listed, without content, so a source
        # that needs it is refused rather than silently derived short (RFC 0252 §C).
        keep = self.spec.record
        inputs = call.args if args_text is None else args_text
        answer: JsonValue | bytes = None
        if keep and result is not None:
            text = result.result_text
            answer = result.result if text is None else text
        # Positionally, in `ToolCallRow`'s field order (its columns'), as `ExecutedCall`.
        return ToolCallRow(
            self.invocation_id,
            self.spec.agent_id,
            self.is_delegate,
            call.tool,
            call.call_id,
            "unknown" if result is None else result.status,
            "live" if result is None else result.served_by,
            None if result is None else result.duration_ms,
            keep,
            inputs if keep else None,
            answer,
            result.error if keep and result is not None else None,
        )

    def _outcome(self, result: ToolResult) -> ToolCallOutcome:
        return ToolCallOutcome(
            status=result.status,
            result=result.result,
            error=result.error,
            duration_ms=result.duration_ms,
            recorded=self.spec.record,
        )


async def run_invocation(invocation: Invocation, *, source: Source) -> InvocationResult:
    """Emit the bracket around one agent run; an agent that raises ends the invocation
    `failed`, its exception logged with its traceback (a model that did not answer or an
    agent outside the host that failed: its message only) and kept with the invocation."""
    journal, agent_id = invocation.journal, invocation.agent_id
    invocation.shared.invoked_agents.add(agent_id)
    started = now()
    journal.emit(
        invocation_started(invocation.invocation_id, agent_id, source), node_id=invocation.node_id
    )
    shared = invocation.shared
    try:
        decision = await invocation.spec.agent.invoke(invocation)
    except (RunClosed, StepNotLanded):
        raise
    except Exception as exc:
        error = _raised(invocation, exc)
        _close(invocation, "failed", started, error)
        return InvocationResult(
            None,
            True,
            shared.executed,
            shared.fixture_misses,
            shared.invoked_agents,
            shared.models,
            error,
            stderr=invocation.stderr,
        )
    finally:
        invocation.revoke()
    # As the agent decided it: the event and the grade are of this, whatever the agent's
    # code does later with the object it returned.
    decision = json_text.copy(decision)
    journal.emit(decided(agent_id, decision), node_id=invocation.node_id)
    idle = invocation.idle()
    _close(invocation, "completed", started, None, idle)
    return InvocationResult(
        decision,
        False,
        shared.executed,
        shared.fixture_misses,
        shared.invoked_agents,
        shared.models,
        stderr=invocation.stderr,
        idle=idle,
    )


def invocation_started(invocation_id: str, agent_id: str, source: Source) -> events.Built:
    """`agent.invocation-started`'s payload (`events.InvocationStarted`, as its `to_wire`
    writes it): the host's own ids and a `Source` literal, so nothing to validate on a
    path every trial takes (events.Built)."""
    wire = {"invocationId": invocation_id, "agentId": agent_id, "source": source}
    return events.Built(events.InvocationStarted.TYPE, wire)


def decided(agent_id: str, decision: JsonValue) -> events.Built:
    """`agent.decided`'s payload (`events.Decided`, as its `to_wire` writes it): the host's
    own agent id and the host's own copy of the decision (`json_text.copy`, so JSON
    already), built as `invocation_started` is; a null decision is left out, as
    `to_wire` leaves out every None."""
    wire: dict[str, Any] = {"agentId": agent_id}
    if decision is not None:
        wire["decision"] = decision
    return events.Built(events.Decided.TYPE, wire)


def invocation_completed(
    invocation_id: str, agent_id: str, outcome: Literal["completed", "failed"]
) -> events.Built:
    """`agent.invocation-completed`'s payload (`events.InvocationCompleted`, as its `to_wire`
    writes it), built as `invocation_started` is."""
    wire = {"invocationId": invocation_id, "agentId": agent_id, "outcome": outcome}
    return events.Built(events.InvocationCompleted.TYPE, wire)


def _raised(invocation: Invocation, exc: Exception) -> dict[str, Any]:
    """The agent's exception as kept and logged: redacted like a tool's error, so a secret
    in its message (a failing client's request it repeats) reaches no record and no log."""
    redact = invocation.boundary.live.redactor.redact
    also = invocation._known_token()
    message = redact(str(exc), also)
    trace = redact("".join(traceback.format_exception(exc)), also)
    where = invocation.where
    # A model that did not answer, or an agent outside the host that failed, is no bug in
    # the host's lane: the message says which server or process and why, and a traceback
    # through the lane's code would bury that. An in-process agent's own code gets one.
    shown = message if isinstance(exc, ModelCallFailed | AgentFailed) else trace
    log.error(
        "agent %s raised %s in run %s%s%s\n%s",
        invocation.agent_id,
        type(exc).__name__,
        where.run_id,
        "" if where.task_id is None else f", task {where.task_id}",
        "" if where.trial is None else f", trial {where.trial}",
        shown,
    )
    return {"type": type(exc).__name__, "message": message, "traceback": trace}


def _close(
    invocation: Invocation,
    outcome: Literal["completed", "failed"],
    started: datetime,
    error: dict[str, Any] | None,
    idle: tuple[evals.IdleReason, ...] = (),
) -> None:
    invocation.journal.emit(
        invocation_completed(invocation.invocation_id, invocation.agent_id, outcome),
        node_id=invocation.node_id,
    )
    where = invocation.where
    offered = invocation.offered()
    invocation.journal.record_listings(offered.servers)
    invocation.journal.record_invocation(
        InvocationRow(
            invocation_id=invocation.invocation_id,
            agent_id=invocation.agent_id,
            is_delegate=invocation.is_delegate,
            node_id=invocation.node_id,
            task_id=where.task_id,
            trial=where.trial,
            outcome=outcome,
            error=error,
            started_at=started,
            completed_at=now(),
            tools_digest=offered.digest,
            stderr=invocation.stderr,
            idle=list(idle) or None,
        )
    )
