"""Create-time rules of an eval run (RFC 0251 §B–§C, RFC 0252 §B–§C).

The field rules raise `errors.ValidationFailed` naming the rule that failed;
no message ever carries a run id (the ids in `baselineRunId` and `fixtureRuns`
values are never echoed). The usability predicates return a bool over facts
the engine loads from the store: the engine raises the one uniform refusal
for every unusable baseline or source, so no reason can leak (RFC 0251 §C,
RFC 0252 §C).

Default modes (RFC 0251 §B "absent ⇒ the host's default"; this host's
decision): the suite's modes, in suite order, that the host advertises and
runs by default, then
- never `regression`, even beside a `baselineRunId`: §B refuses "baselineRunId
  without regression in evalModes", and an absent `evalModes` names no mode, so
  a baseline needs `evalModes` naming `regression` (the SDK documents the field
  the same way);
- without `live-shadow` unless nothing else is left (it ignores fixtures, so a
  run that names none should exercise them; RFC 0252 §B refuses it with
  `fixtureRuns`).
An empty default is refused: the caller must name `evalModes`.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from wopeval.wire import errors
from wopeval.wire.eval_options import EvalMode
from wopeval.wire.runs import RunStatus
from wopeval.wire.suite import TASK_ID_PATTERN, Suite

_TASK_ID = re.compile(TASK_ID_PATTERN)


def resolve_eval_modes(
    requested: Sequence[EvalMode] | None,
    suite_modes: Sequence[EvalMode],
    host_modes: Collection[EvalMode],
    default_modes: Collection[EvalMode],
) -> tuple[EvalMode, ...]:
    """RFC 0251 §B: the modes the run exercises, or a refusal."""
    if requested is None:
        return _default_modes(suite_modes, host_modes, default_modes)
    # "evalModes: a non-empty array ..."
    if not requested:
        raise errors.ValidationFailed("evalModes must not be empty")
    # "... of distinct RFC 0081 §D modes."
    if len(set(requested)) != len(requested):
        raise errors.ValidationFailed("evalModes must be distinct")
    # "It MUST be a subset of the suite's modes ..."
    if not set(requested) <= set(suite_modes):
        raise errors.ValidationFailed("evalModes names a mode the suite does not declare")
    # "... and of the host's advertised agents.evalSuite.modes."
    if not set(requested) <= set(host_modes):
        raise errors.ValidationFailed("evalModes names a mode this host does not advertise")
    return tuple(requested)


def _default_modes(
    suite_modes: Sequence[EvalMode],
    host_modes: Collection[EvalMode],
    default_modes: Collection[EvalMode],
) -> tuple[EvalMode, ...]:
    """The host default (module docstring)."""
    modes = [m for m in suite_modes if m in host_modes and m in default_modes and m != "regression"]
    if any(m != "live-shadow" for m in modes):
        modes = [m for m in modes if m != "live-shadow"]
    if not modes:
        raise errors.ValidationFailed(
            "evalModes is absent and the suite declares no mode this host runs by default"
        )
    return tuple(modes)


def check_baseline_fields(modes: Collection[EvalMode], baseline_run_id: str | None) -> None:
    """RFC 0251 §B: regression and a baseline come together or not at all."""
    # "baselineRunId without regression in evalModes"
    if baseline_run_id is not None and "regression" not in modes:
        raise errors.ValidationFailed("baselineRunId needs regression among the run's modes")
    # "or regression in evalModes without baselineRunId"
    if baseline_run_id is None and "regression" in modes:
        raise errors.ValidationFailed("regression among the run's modes needs baselineRunId")


def check_eval_only_fields(
    request_has_mode_eval: bool,
    eval_modes: object | None,
    baseline_run_id: object | None,
    fixture_runs: object | None,
) -> None:
    """RFC 0251 §B and RFC 0252 §B: the eval-only properties need `mode: "eval"`."""
    if request_has_mode_eval:
        return
    # RFC 0251 §B: "either property without mode: "eval""
    if eval_modes is not None:
        raise errors.ValidationFailed('evalModes is only valid with mode "eval"')
    if baseline_run_id is not None:
        raise errors.ValidationFailed('baselineRunId is only valid with mode "eval"')
    # RFC 0252 §B: "fixtureRuns without mode: "eval""
    if fixture_runs is not None:
        raise errors.ValidationFailed('fixtureRuns is only valid with mode "eval"')


def check_fixture_runs_fields(
    fixture_runs: Mapping[str, str] | None, suite: Suite, modes: Collection[EvalMode]
) -> None:
    """RFC 0252 §B: the `fixtureRuns` field rules (the source lookups come later, §C)."""
    if fixture_runs is None:
        return
    # "or with no keys"
    if not fixture_runs:
        raise errors.ValidationFailed("fixtureRuns must name at least one task")
    for key in fixture_runs:
        task = suite.task(key)
        # "a key that is not a taskId of the suite"
        if task is None:
            raise errors.ValidationFailed(
                f"fixtureRuns key {_quote(key)} is not a taskId of the suite"
            )
        # "a named task whose suite fixtures carries toolResponses or onMiss" — present
        # counts, even `toolResponses: []`: "the two sources are never merged".
        fixtures = task.fixtures
        if fixtures is not None and (
            fixtures.toolResponses is not None or fixtures.onMiss is not None
        ):
            raise errors.ValidationFailed(
                f"fixtureRuns names task {_quote(key)}, whose suite fixtures carry "
                "toolResponses or onMiss"
            )
    # "live-shadow among the run's modes (it ignores fixtures)"
    if "live-shadow" in modes:
        raise errors.ValidationFailed("fixtureRuns cannot be used with live-shadow")


def _quote(key: str) -> str:
    """A key in a message only when it has a taskId's shape (never a run id, which has '/')."""
    return repr(key) if _TASK_ID.fullmatch(key) and len(key) <= 64 else "(not a taskId)"


@dataclass(frozen=True, slots=True)
class BaselineFacts:
    """What the store knows about a candidate baseline run."""

    tenant: str
    is_eval: bool
    suite_id: str | None
    """The `suiteId` the run ran; `None` for a workflow run."""
    status: RunStatus
    has_summary: bool


@dataclass(frozen=True, slots=True)
class SourceFacts:
    """What the store knows about a candidate source run, for one agent."""

    tenant: str
    status: RunStatus
    agent_id: str
    """The agent these counts describe."""
    invocation_count: int
    """Invocations of `agent_id` in the run."""
    all_calls_held: bool
    """Every own call of `agent_id` is held with inputs and result or error.

    False when any was erased or never recorded (recording off for the agent).
    """
    has_failed_call: bool
    """Some own call of `agent_id` failed or never ran."""


def is_usable_baseline(candidate: BaselineFacts | None, *, tenant: str, suite_id: str) -> bool:
    """RFC 0251 §C: whether the run may be this run's baseline."""
    # "a run that does not exist" (an id that does not decode included).
    if candidate is None:
        return False
    # "that the caller's owner triple can read" — a wildcard key never widens it.
    if candidate.tenant != tenant:
        return False
    # "an eval run ... that ran a suite with the same suiteId" (any version).
    if not candidate.is_eval or candidate.suite_id != suite_id:
        return False
    # "and that completed with a served EvalSummary".
    return candidate.status is RunStatus.COMPLETED and candidate.has_summary


def is_usable_source(
    facts: SourceFacts | None, *, tenant: str, agent_id: str, fixture_errors_enabled: bool
) -> bool:
    """RFC 0252 §C: whether the run may be a task's fixture source."""
    # "a run that does not exist (an id that does not decode included)".
    if facts is None or facts.agent_id != agent_id:
        return False
    # "a terminal run that the caller's owner triple can read".
    if facts.tenant != tenant or not facts.status.is_terminal:
        return False
    # "that holds at least one agent invocation of the eval's agentId".
    if facts.invocation_count < 1:
        return False
    # "the host still holds every one of that agent's tool calls as executed".
    if not facts.all_calls_held:
        return False
    # "A source run with a failed tool call is usable only on a host that also
    # advertises fixtureErrors."
    return fixture_errors_enabled or not facts.has_failed_call
