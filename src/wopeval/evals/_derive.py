"""Fixtures derived from a recorded run (RFC 0252 §D).

This module states the rules: which of a source run's as-executed calls
(`RecordedCall`s) become the task's `toolResponses`, and each entry's document. A create
has the store write those documents in SQL (`ToolCallsRepo.derive`, a source's 10,000
calls never read into Python); tests/engine/test_derive_documents.py holds its text
byte for byte to what these functions derive, on both stores.
Nothing here reads an egress request: `inputs` are the args as the agent
passed them, before the tool layer injected any credential (SR-1).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from operator import attrgetter
from typing import Any, Literal, NamedTuple, Protocol

from pydantic import JsonValue

from wopeval.wire.suite import ToolResponse

CallStatus = Literal["ok", "error", "forbidden", "rate_limited"]
"""`agent.tool-returned.status`; `forbidden` and `rate_limited` never ran the tool."""

RecordedStatus = CallStatus | Literal["unknown"]
"""A recorded call's status: `unknown` is a live call whose tool may have run, but whose
outcome never reached the record (the host stopped first); such a run is no usable source."""

ServedBy = Literal["live", "fixture"]


class RecordedCall(NamedTuple):
    """One tool call as executed, as the host records it (docs/design.md §3 "Recording").

    A named tuple, immutable like a frozen dataclass and built several times faster: a
    derivation builds one per call of its sources (10,000 for a 10,000-call source)."""

    sequence: int
    """Event sequence of the call's `agent.tool-called` in its run."""
    invocation_id: str
    agent_id: str
    is_delegate: bool
    """Made inside a handed-off or dispatched child of the agent, not by the agent itself."""
    tool: str
    call_id: str
    inputs: JsonValue
    """The args as the agent passed them."""
    status: RecordedStatus
    result: JsonValue
    """The tool's result when `status` is `ok`."""
    error: dict[str, JsonValue] | None
    """The error (`{code, message, ...}`) when the call failed or never ran."""
    served_by: ServedBy
    duration_ms: int | None
    """Absent when the call never started."""


class DerivableCall(Protocol):
    """What derivation reads of a recorded call (a `RecordedCall`), its contents decoded."""

    @property
    def sequence(self) -> int: ...
    @property
    def agent_id(self) -> str: ...
    @property
    def is_delegate(self) -> bool: ...
    @property
    def tool(self) -> str: ...
    @property
    def status(self) -> RecordedStatus: ...
    @property
    def inputs(self) -> JsonValue: ...
    @property
    def result(self) -> JsonValue: ...
    @property
    def error(self) -> dict[str, JsonValue] | None: ...


_SEQUENCE = attrgetter("sequence")


def own_calls(calls: Iterable[DerivableCall], agent_id: str) -> list[DerivableCall]:
    """RFC 0252 §D: calls "of the eval's agentId, excluding delegates", in sequence order."""
    return sorted((c for c in calls if c.agent_id == agent_id and not c.is_delegate), key=_SEQUENCE)


def derive_fixtures(calls: Iterable[DerivableCall], agent_id: str) -> list[ToolResponse]:
    """RFC 0252 §D: one `toolResponses` entry per own call of the agent, in sequence order.

    The caller passes every invocation's calls (UQ 1); the task then runs
    under `onMiss: fail`.
    """
    return fixtures_of(derive_fixture_documents(calls, agent_id))


def derive_fixture_documents(
    calls: Iterable[DerivableCall], agent_id: str
) -> list[dict[str, JsonValue]]:
    """`derive_fixtures` as the `toolResponses` documents: what the eval run stores as its
    derived copy, made without a model round trip."""
    return [_document(call) for call in own_calls(calls, agent_id)]


def fixtures_of(documents: Iterable[Mapping[str, Any]]) -> list[ToolResponse]:
    """The entries of `derive_fixture_documents`' documents.

    Built without validation: a derived document is a tool name, `argsMatch: "exact"`
    beside the args it needs, and values decoded from the store's JSON, so validating
    could never refuse one; at 10,000 calls it is most of a create's time.
    """
    return [ToolResponse.model_construct(**document) for document in documents]


def has_failed_call(calls: Iterable[DerivableCall], agent_id: str) -> bool:
    """RFC 0252 §C: whether any own call of the agent failed or never ran."""
    return any(call.status != "ok" for call in own_calls(calls, agent_id))


def _document(call: DerivableCall) -> dict[str, JsonValue]:
    # "`tool` is the call's toolName; `args` is the call's inputs as the agent
    # passed them, with `argsMatch: "exact"`; `response` is its result."
    if call.status == "ok":
        return {
            "tool": call.tool,
            "args": call.inputs,
            "argsMatch": "exact",
            "response": call.result,
        }
    # "A call that failed, or never ran (`forbidden` or `rate_limited`), yields
    # `isError: true` with its error as `response`." A record without an error
    # object still carries its status as the code, so the agent sees a failure.
    error: JsonValue = call.error if call.error is not None else {"code": call.status}
    return {
        "tool": call.tool,
        "args": call.inputs,
        "argsMatch": "exact",
        "response": error,
        "isError": True,
    }
