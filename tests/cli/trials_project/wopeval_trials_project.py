"""Agents for the `--trials auto` tests: outcomes fixed in advance, so verdicts are too.

- `good` decides `input.answer` every time;
- `seeded` is right on its task's invocations that `input.pattern` marks `1`: the
  n-th invocation for a task (process-wide, counted per `input.key`) reads
  `pattern[n % len(pattern)]`. A task's trials run in order, so N trials of a task
  pass exactly as its pattern says, and extra trials in a later run of the same
  process carry on where the first run stopped.
"""

from __future__ import annotations

from collections import Counter

from pydantic import JsonValue

from wopeval.agents import AgentContext

_invocations: Counter[str] = Counter()


async def good(context: AgentContext) -> JsonValue:
    case = context.input if isinstance(context.input, dict) else {}
    return case.get("answer")


async def seeded(context: AgentContext) -> JsonValue:
    case = context.input if isinstance(context.input, dict) else {}
    key, pattern = str(case.get("key")), str(case.get("pattern", "1"))
    turn = _invocations[key]
    _invocations[key] += 1
    return case.get("answer") if pattern[turn % len(pattern)] == "1" else "wrong"
