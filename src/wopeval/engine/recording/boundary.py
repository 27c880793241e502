"""The tool boundary's transports (G8): fixtures that answer a call, and the live tools.

Every tool call of every agent passes through `Invocation.call_tool` (see
invocation.py): it asks the `Boundary` for a fixture's answer first and runs
the tool live only when there is none to give, recording the call as
executed either way. Exceptions from tools are translated here, at the edge.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from pydantic import JsonValue

from wopeval import evals
from wopeval.engine.recording.redaction import Redactor
from wopeval.engine.recording.tool_contracts import RecordedTools
from wopeval.tools import Offered, ToolContext, ToolFailure, ToolRegistry
from wopeval.wire import json_text
from wopeval.wire.events import ToolStatus

if TYPE_CHECKING:
    from wopeval.engine.recording.models import ModelServer

ServedBy = Literal["live", "fixture"]


class ToolCall(NamedTuple):
    tool: str
    args: JsonValue
    call_id: str
    args_text: bytes | None = None
    """`args` as `json_text.written` wrote them, when the boundary copied them through
    that text (and cut nothing from them after): the fixture cursor finds an entry by it."""


class ToolResult(NamedTuple):
    """What the boundary answers a call with (a named tuple: one per call, built fast)."""

    status: ToolStatus
    result: JsonValue | None
    error: dict[str, Any] | None
    served_by: ServedBy
    duration_ms: int | None
    miss: evals.MissDetail | None = None
    """A fixture miss: the closest recording and how the call differs from it."""
    args_hash: str | None = None
    """The call's `argsHash`, when the fixture matcher already wrote its canonical args."""
    result_text: bytes | None = None
    """`result` as `json_text.written` writes it, when it was written on the way here: the
    call's event, its record and the agent's copy are made of this text, not of `result`
    written again. Whatever changes `result` (redaction) drops it."""

    @property
    def fixture_miss(self) -> bool:
        return self.miss is not None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class LiveTransport:
    """Runs the registered tool; failures of any kind become tool errors, never crashed runs."""

    def __init__(
        self,
        registry: ToolRegistry,
        context: ToolContext,
        timeout: float,
        prices: Mapping[str, evals.ModelPrice] | None = None,
        *,
        enabled: bool = True,
        redactor: Redactor | None = None,
    ) -> None:
        self.registry = registry
        self.context = context
        self._timeout = timeout
        self.prices: Mapping[str, evals.ModelPrice] = prices or {}
        """The project's model prices, for the cost of each live model exchange."""
        self._enabled = enabled
        """False on an offline host: no call reaches a live tool, every one fails closed."""
        self.redactor = redactor or Redactor()
        """The project's redaction of what its agents say (their stderr) before it is kept."""

    async def handle(self, call: ToolCall) -> ToolResult:
        if not self._enabled:
            failure = ToolFailure(
                "live_tools_disabled",
                f"{call.tool} would run live, and this host runs no tool live (offline)",
            )
            return _failed(failure, "live", None)
        tool = self.registry.get(call.tool)
        if tool is None:
            failure = ToolFailure("unknown_tool", f"no tool named {call.tool!r} is registered")
            return _failed(failure, "live", None)
        timeout = self.registry.timeout(call.tool) or self._timeout
        started = time.perf_counter()
        try:
            # In this task, not one of wait_for's own: a live call is two commits and the
            # tool, and a task more cost it a turn of the loop each way.
            async with asyncio.timeout(timeout):
                result = await tool.call(call.args, self.context)
        except ToolFailure as raised:
            return _failed(raised, "live", _elapsed(started))
        except TimeoutError:
            timed_out = ToolFailure(
                "tool_timeout", f"{call.tool} did not answer in {timeout:g}s", retryable=True
            )
            return _failed(timed_out, "live", _elapsed(started))
        except Exception as exc:  # any tool crash is the agent's tool error, not the run's
            crashed = ToolFailure("tool_raised", f"{call.tool} raised {type(exc).__name__}")
            return _failed(crashed, "live", _elapsed(started))
        try:
            # The answer as it was given: a tool that keeps it and changes it later cannot
            # change the record.
            answer, text = json_text.copy_with_text(result)
        except TypeError:
            not_json = ToolFailure(
                "tool_answer_not_json",
                f"{call.tool} answered with a {type(result).__name__} that is not JSON",
            )
            return _failed(not_json, "live", _elapsed(started))
        return ToolResult("ok", answer, None, "live", _elapsed(started), result_text=text)


class FixtureServer:
    """Serves fixture entries (RFC 0244 §D); a miss under `fail` runs nothing live."""

    def __init__(self, cursor: evals.FixtureCursor) -> None:
        self._cursor = cursor

    def serve(self, call: ToolCall) -> ToolResult | None:
        """The fixture's answer to `call`, or None when it is to run live (`onMiss: live`)."""
        outcome = self._cursor.serve(call.tool, call.args, call.args_text)
        if isinstance(outcome, evals.Served):
            entry = outcome.entry
            # An entry with an answer's text answers with it: only one without may be an error.
            if outcome.answer_text is None and entry.is_error:
                failed = _failed(ToolFailure.from_error(_as_error(entry.response)), "fixture", 0)
                return failed._replace(args_hash=outcome.args_hash)
            # The recorded response is the host's own, never changed: served as it is, and
            # its text (written once with the task's fixture index) makes the call's event,
            # its record and the agent's copy.
            return ToolResult(
                "ok",
                entry.response,
                None,
                "fixture",
                0,
                None,
                outcome.args_hash,
                outcome.answer_text,
            )
        if isinstance(outcome, evals.Missed):
            failure = ToolFailure(
                "fixture_miss", f"no unconsumed fixture matches this call to {call.tool}"
            )
            return ToolResult("error", None, failure.to_error(), "fixture", 0, miss=outcome.detail)
        return None


@dataclass(frozen=True)
class Boundary:
    """Where an invocation's calls go: its fixtures first (in an eval task that has them),
    else the live tools; under model replay, its model requests go to `models`. `recorded`
    offers MCP servers' tools as a source run recorded them (an offline eval task)."""

    live: LiveTransport
    fixtures: FixtureServer | None = None
    models: ModelServer | None = None
    recorded: RecordedTools | None = None

    def served(self, call: ToolCall) -> ToolResult | None:
        return None if self.fixtures is None else self.fixtures.serve(call)

    def offered(self, allowlist: tuple[str, ...] | None) -> Offered:
        """The tools an agent with `allowlist` (None: every tool) is offered."""
        registry = self.live.registry
        if self.recorded is None:
            return registry.offered(allowlist)
        return self.recorded.offered(registry, allowlist)


def _as_error(response: JsonValue) -> dict[str, Any]:
    """An `isError` entry's response as a tool error (RFC 0245); a bare value is wrapped.

    `ToolFailure.from_error` fills in the code and message an error lacks (`tool_error`,
    "The tool failed."), so they are not repeated here."""
    if isinstance(response, dict) and isinstance(response.get("code"), str):
        return response
    return {"details": {"response": response}}


def _failed(failure: ToolFailure, served_by: ServedBy, duration: int | None) -> ToolResult:
    status: ToolStatus = "error"
    if failure.status in ("forbidden", "rate_limited"):
        status = "forbidden" if failure.status == "forbidden" else "rate_limited"
        duration = None
    return ToolResult(status, None, failure.to_error(), served_by, duration)


def _elapsed(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)
