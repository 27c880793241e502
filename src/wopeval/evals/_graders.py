"""Graders: a task's decision and calls against its `expected` (RFC 0081 §A; DESIGN.md §3).

`golden` compares the agent's decision with `match.value`; `trajectory` compares
the calls the agent made, as executed and excluding delegates (RFC 0244 §A),
with `calls`. Both return a bool for one trial; the pass policy over trials is
`_policy.trials_pass`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import JsonValue
from scipy.sparse import csr_array
from scipy.sparse.csgraph import maximum_bipartite_matching

from wopeval.evals._canonical import compact_json, json_equal
from wopeval.evals._matcher import args_match
from wopeval.wire.suite import Expected, ExpectedCall, Match

ServedAs = Literal["fixture", "live", "miss"]
"""How the boundary answered a call: a fixture entry, the live tool, or a fixture miss."""


@dataclass(frozen=True, slots=True)
class ExecutedCall:
    """One tool call as the agent made it (the as-executed boundary, RFC 0244 §A)."""

    tool: str
    args: JsonValue
    is_delegate: bool = False
    status: str = "ok"
    """`agent.tool-returned.status`."""
    result: JsonValue = None
    """The tool's result when `status` is `ok`."""
    error: dict[str, Any] | None = field(default=None)
    """The tool error otherwise (`{code, message, ...}`)."""
    served: ServedAs = "live"
    duration_ms: int | None = None


def stringify(value: JsonValue) -> str:
    """RFC 0081 "stringified output": a string as itself, anything else as compact JSON."""
    return value if isinstance(value, str) else compact_json(value)


def grade_task(expected: Expected, decision: JsonValue, calls: Sequence[ExecutedCall]) -> bool:
    """Grade one trial by its task's `expected.kind` (rubric tasks are refused at create)."""
    if expected.kind == "golden" and expected.match is not None:
        return grade_golden(expected.match, decision)
    if expected.kind == "trajectory":
        return grade_trajectory(expected, calls)
    return False


def grade_golden(match: Match, decision: JsonValue) -> bool:
    """RFC 0081 §A match strategies on the agent's decision."""
    # "`exact` means the stringified output equals `value`".
    if match.strategy == "exact":
        return stringify(decision) == stringify(match.value)
    # "`contains`": the stringified value occurs in the stringified output.
    if match.strategy == "contains":
        return stringify(match.value) in stringify(decision)
    # "`json-match` means deep equality" (as RFC 8785 canonical JSON).
    return json_equal(decision, match.value)


def grade_trajectory(expected: Expected, calls: Sequence[ExecutedCall]) -> bool:
    """DESIGN.md §3 trajectory grading over the calls as executed, delegates excluded.

    `strict`: the same sequence. `unordered`: the same multiset. `subset`: every
    executed call is among the expected ones. `superset`: every expected call
    is among the executed ones. Multisets pair each call with at most one
    expected call; an expected call's args follow the fixture `argsMatch` rules.
    """
    wanted = expected.calls or []
    # RFC 0244 §A: "the default excludes delegates".
    made = [call for call in calls if not call.is_delegate]
    if expected.order == "strict":
        return len(wanted) == len(made) and all(
            _matches(w, m) for w, m in zip(wanted, made, strict=True)
        )
    paired = _max_pairing(wanted, made)
    if expected.order == "unordered":
        return len(wanted) == len(made) == paired
    if expected.order == "subset":
        return paired == len(made)
    return paired == len(wanted)


def _matches(wanted: ExpectedCall, made: ExecutedCall) -> bool:
    return wanted.tool == made.tool and args_match(wanted, made.args)


def _max_pairing(wanted: Sequence[ExpectedCall], made: Sequence[ExecutedCall]) -> int:
    """Size of a maximum one-to-one pairing of expected with executed calls.

    Greedy pairing is wrong once patterns overlap (an `ignore` pattern can take
    the only call a stricter pattern accepts), so this is bipartite matching.
    """
    if not wanted or not made:
        return 0
    graph = np.array([[_matches(w, m) for m in made] for w in wanted], dtype=np.int8)
    pairs = maximum_bipartite_matching(csr_array(graph), perm_type="column")
    return int(np.count_nonzero(pairs >= 0))
