"""Trajectory grading: the calls the agent made against `expected.calls` (docs/design.md §3).

The calls are taken as executed, delegates' calls excluded (RFC 0244 §A); an
expected call's args follow the fixture `argsMatch` rules (`args_match`).
Positions in reasons are 0-based: `expected.calls[1]` points into the suite,
`made[1]` is the second graded call.
"""

from __future__ import annotations

from collections.abc import Sequence

from wopeval.evals._executed import ExecutedCall
from wopeval.evals._grade import SHOWN_CHANGES, Grade, describe_changes, shown
from wopeval.evals._jsondiff import PathChange, json_diff, subset_diff
from wopeval.evals._matcher import args_match
from wopeval.wire.suite import Expected, ExpectedCall


def grade_trajectory(expected: Expected, calls: Sequence[ExecutedCall]) -> Grade:
    """docs/design.md §3 trajectory grading over the calls as executed, delegates excluded.

    `strict`: the same sequence. `unordered`: the same multiset. `subset`: every
    executed call is among the expected ones. `superset`: every expected call
    is among the executed ones. Multisets pair each call with at most one
    expected call.
    """
    wanted = expected.calls or []
    # RFC 0244 §A: "the default excludes delegates".
    made = [call for call in calls if not call.is_delegate]
    label = f"trajectory ({expected.order})"
    if expected.order == "strict":
        return _strict(label, wanted, made)
    pairs = _max_pairing(wanted, made)
    missing = [i for i, j in enumerate(pairs) if j < 0]
    taken = {j for j in pairs if j >= 0}
    unexpected = [j for j in range(len(made)) if j not in taken]
    # unordered: the same multiset; subset: nothing unexpected; superset: nothing missing.
    problems: list[str] = []
    if expected.order in ("unordered", "superset") and missing:
        problems.append(_not_made(wanted, missing))
    if expected.order in ("unordered", "subset") and unexpected:
        problems.append(_not_expected(made, unexpected))
    if problems:
        return Grade.failing(f"{label}: " + "; ".join(problems))
    wanted_n = _calls(len(wanted))
    held = {
        "unordered": f"the calls made match the {wanted_n} expected, in some order",
        "subset": f"every call made is among the {wanted_n} expected ({len(made)} made)",
        "superset": f"the calls made include each of the {wanted_n} expected ({len(made)} made)",
    }
    return Grade.passing(f"{label}: {held[expected.order]}")


def _strict(label: str, wanted: Sequence[ExpectedCall], made: Sequence[ExecutedCall]) -> Grade:
    for index, (pattern, call) in enumerate(zip(wanted, made, strict=False)):
        if _matches(pattern, call):
            continue
        paired = sum(j >= 0 for j in _max_pairing(wanted, made))
        reordered = len(wanted) == len(made) == paired
        reason = f"{label}: "
        if reordered:
            reason += "the expected calls were made in another order; "
        reason += (
            f"the order breaks at made[{index}] {_made_text(call)}, "
            f"expected.calls[{index}] is {_pattern_text(pattern)}"
        )
        changes = _args_changes(pattern, call)
        if changes:
            reason += f"; args: {describe_changes(changes)}"
        return Grade.failing(reason, changes)
    if len(made) > len(wanted):
        extra = list(range(len(wanted), len(made)))
        return Grade.failing(
            f"{label}: {_calls(len(wanted))} expected, {len(made)} made; "
            + _not_expected(made, extra)
        )
    if len(made) < len(wanted):
        absent = list(range(len(made), len(wanted)))
        return Grade.failing(
            f"{label}: {_calls(len(wanted))} expected, {len(made)} made; "
            + _not_made(wanted, absent)
        )
    return Grade.passing(f"{label}: the calls made are the {_calls(len(made))} expected, in order")


def _matches(wanted: ExpectedCall, made: ExecutedCall) -> bool:
    return wanted.tool == made.tool and args_match(wanted, made.args)


def _args_changes(pattern: ExpectedCall, call: ExecutedCall) -> list[PathChange]:
    """How the args differ, when the tool is the one expected (a different tool says enough)."""
    if pattern.tool != call.tool:
        return []
    if pattern.args_match == "exact":
        return json_diff(pattern.args, call.args)
    # `subset`: under `ignore` a call of the expected tool always matches, so it is never here.
    return subset_diff(pattern.args, call.args)


def _not_made(wanted: Sequence[ExpectedCall], indexes: list[int]) -> str:
    listed = [f"expected.calls[{i}] {_pattern_text(wanted[i])}" for i in indexes]
    noun = "expected call not made" if len(indexes) == 1 else "expected calls not made"
    return f"{len(indexes)} {noun}: {_listing(listed)}"


def _not_expected(made: Sequence[ExecutedCall], indexes: list[int]) -> str:
    listed = [f"made[{j}] {_made_text(made[j])}" for j in indexes]
    noun = "call not expected" if len(indexes) == 1 else "calls not expected"
    return f"{len(indexes)} {noun}: {_listing(listed)}"


def _calls(count: int) -> str:
    return "1 call" if count == 1 else f"{count} calls"


def _listing(items: list[str]) -> str:
    text = ", ".join(items[:SHOWN_CHANGES])
    return text + (f", and {len(items) - SHOWN_CHANGES} more" if len(items) > SHOWN_CHANGES else "")


def _made_text(call: ExecutedCall) -> str:
    return f"{call.tool} {shown(call.args)}"


def _pattern_text(pattern: ExpectedCall) -> str:
    mode = pattern.args_match
    if mode == "ignore":
        return f"{pattern.tool} (any args)"
    suffix = " (subset)" if mode == "subset" else ""
    return f"{pattern.tool} {shown(pattern.args)}{suffix}"


def _max_pairing(wanted: Sequence[ExpectedCall], made: Sequence[ExecutedCall]) -> list[int]:
    """For each expected call, the executed call it pairs with (-1: none), in a largest
    one-to-one pairing.

    Greedy pairing is wrong once patterns overlap (an `ignore` pattern can take
    the only call a stricter pattern accepts), so this is bipartite matching.
    """
    if not wanted or not made:
        return [-1] * len(wanted)
    # SciPy (and NumPy with it) costs ~0.5 s to import, paid by every process that imports
    # the evals (the CLI, each host); only an unordered trajectory grade needs it.
    import numpy as np
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import maximum_bipartite_matching

    graph = np.array([[_matches(w, m) for m in made] for w in wanted], dtype=np.int8)
    pairs = maximum_bipartite_matching(csr_array(graph), perm_type="column")
    return [int(j) for j in pairs]
