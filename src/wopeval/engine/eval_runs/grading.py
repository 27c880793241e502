"""Grading one trial: the built-in strategies, and a project's custom graders (docs/graders.md).

Built-in strategies are pure rules (`evals.grade_task`). A `custom` match calls
the project's own code, declared in `wopeval.toml`:

    [[graders]]
    id = "refund-check"
    callable = "support.graders:refund_check"   # (decision, expected, calls) -> answer
    timeout_seconds = 60                        # optional

The callable may be sync (it runs in a worker thread, so a slow one never
stalls other runs) or async. Whatever it does, the trial gets a `Grade`: a
malformed answer, a timeout or an exception fails that trial with a reason
(and, for an exception, its traceback), never the run.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import textwrap
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from wopeval import evals
from wopeval.engine.catalog.graders import CustomGrader
from wopeval.wire.errors import error_pointer
from wopeval.wire.json_text import JsonObject
from wopeval.wire.suite import Expected

ANSWER_SHAPE = "{passed: bool, score: 0..1, reason: str}"


class GraderAnswer(BaseModel):
    """What a custom grader returns: taken as written, nothing coerced (`1` is not `true`)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    passed: bool
    score: float = Field(ge=0, le=1, allow_inf_nan=False)
    reason: str


async def grade_trial(
    expected: Expected,
    decision: JsonValue,
    calls: Sequence[evals.ExecutedCall],
    graders: Mapping[str, CustomGrader],
) -> evals.Grade:
    """The trial's `Grade`: a custom grader for a `custom` match, the built-in rules otherwise."""
    match = expected.match
    if expected.kind != "golden" or match is None or match.strategy != "custom":
        return evals.grade_task(expected, decision, calls)
    grader = graders.get(match.grader or "")
    if grader is None:
        # Refused at create (evals.check_known_graders); kept as a failed trial, not a crash.
        return evals.Grade.failing(f"custom {match.grader}: this host declares no such grader")
    # RFC 0244 §A: the trace, like a trajectory, leaves the delegates' calls out.
    trace = [call.to_trace() for call in calls if not call.is_delegate]
    # Copies: the grader may change what it is given without touching the trial's record.
    decision, value, trace = copy.deepcopy((decision, match.value, trace))
    return await _call(grader, decision, value, trace)


async def _call(
    grader: CustomGrader, decision: JsonValue, value: JsonValue, trace: list[JsonObject]
) -> evals.Grade:
    label = f"custom {grader.grader_id}"
    try:
        answer = await asyncio.wait_for(
            _invoke(grader.function, decision, value, trace),
            grader.timeout_seconds,
        )
    except TimeoutError:
        return evals.Grade.failing(f"{label}: no answer in {grader.timeout_seconds:g} s")
    except Exception as exc:  # the project's code failing fails its trial, never the run
        message = textwrap.shorten(str(exc), width=200, placeholder=" …")
        return evals.Grade(
            passed=False,
            score=0.0,
            reason=f"{label} raised {type(exc).__name__}" + (f": {message}" if message else ""),
            traceback="".join(traceback.format_exception(exc)),
        )
    return _graded(label, answer)


async def _invoke(function: Callable[..., Any], *arguments: Any) -> Any:
    if inspect.iscoroutinefunction(function):
        return await function(*arguments)
    result = await asyncio.to_thread(function, *arguments)
    # A sync callable may still hand back an awaitable (an object with an async __call__).
    return await result if inspect.isawaitable(result) else result


def _graded(label: str, answer: Any) -> evals.Grade:
    if not isinstance(answer, dict):
        return evals.Grade.failing(
            f"{label}: answered {type(answer).__name__}, not an object {ANSWER_SHAPE}"
        )
    try:
        parsed = GraderAnswer.model_validate(answer)
    except ValidationError as exc:
        problems = "; ".join(f"{error_pointer(e['loc'])}: {e['msg']}" for e in exc.errors())
        return evals.Grade.failing(f"{label}: its answer is not {ANSWER_SHAPE}: {problems}")
    return evals.Grade(passed=parsed.passed, score=parsed.score, reason=f"{label}: {parsed.reason}")
