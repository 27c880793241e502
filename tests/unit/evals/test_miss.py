"""`evals/_miss.py`: the closest unconsumed entry to a call that missed, and the args diff."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import JsonValue

from wopeval import evals
from wopeval.wire.suite import ToolResponse


def entry(tool: str, args: JsonValue, **fields: Any) -> ToolResponse:
    return ToolResponse.model_validate({"tool": tool, "args": args, "response": "r", **fields})


RECORDED = [
    entry("crm:lookup", {"customer": "c-1"}),
    entry("crm:refund", {"customer": "c-1", "amount": 5}),
    entry("crm:refund", {"customer": "c-2", "amount": 5}),
]


def test_an_extra_argument_is_named_with_its_value() -> None:
    # The issue's case: the changed agent added `"round": 1` to a recorded call.
    detail = evals.closest_entry(
        RECORDED, frozenset(), "crm:refund", {"customer": "c-1", "amount": 5, "round": 1}
    )
    assert (detail.closest_index, detail.closest_args) == (1, {"customer": "c-1", "amount": 5})
    assert detail.diff == (evals.PathChange("$.round", "added", actual=1),)
    assert detail.reason == (
        "no unconsumed fixture matches this call to crm:refund; closest: toolResponses[1], "
        "1 path differs: $.round: recorded (absent), the call has 1"
    )


def test_a_changed_argument_names_the_recorded_value() -> None:
    detail = evals.closest_entry(
        RECORDED, frozenset(), "crm:refund", {"customer": "c-1", "amount": 7}
    )
    assert detail.closest_index == 1
    assert detail.diff == (evals.PathChange("$.amount", "changed", 5, 7),)
    assert detail.reason.endswith("$.amount: recorded 5, the call has 7")


def test_fewest_differing_paths_wins() -> None:
    detail = evals.closest_entry(
        RECORDED, frozenset(), "crm:refund", {"customer": "c-2", "amount": 9}
    )
    assert detail.closest_index == 2
    assert [c.path for c in detail.diff] == ["$.amount"]


def test_a_tie_goes_to_the_first_entry_in_list_order() -> None:
    detail = evals.closest_entry(
        RECORDED, frozenset(), "crm:refund", {"customer": "c-3", "amount": 5}
    )
    assert detail.closest_index == 1


def test_consumed_entries_are_skipped() -> None:
    call: JsonValue = {"customer": "c-1", "amount": 7}
    detail = evals.closest_entry(RECORDED, frozenset({1}), "crm:refund", call)
    assert detail.closest_index == 2
    assert detail.consumed_for_tool == 1


def test_no_entry_left_for_the_tool() -> None:
    detail = evals.closest_entry(RECORDED, frozenset({1, 2}), "crm:refund", {"customer": "c-1"})
    assert (detail.closest_index, detail.closest_args, detail.diff) == (None, None, ())
    assert detail.reason == (
        "no unconsumed fixture matches this call to crm:refund; "
        "none is left for this tool (2 consumed)"
    )
    other_tool = evals.closest_entry(RECORDED, frozenset(), "crm:delete", {})
    assert (other_tool.closest_index, other_tool.consumed_for_tool) == (None, 0)


def test_a_subset_entry_counts_only_the_paths_it_names() -> None:
    entries = [entry("crm:refund", {"customer": "c-1"}, argsMatch="subset")]
    detail = evals.closest_entry(
        entries, frozenset(), "crm:refund", {"customer": "c-9", "amount": 5}
    )
    assert detail.diff == (evals.PathChange("$.customer", "changed", "c-1", "c-9"),)


def test_to_json_is_what_a_task_detail_records() -> None:
    detail = evals.closest_entry(RECORDED, frozenset(), "crm:lookup", {"customer": "c-4"})
    assert detail.to_json() == {
        "tool": "crm:lookup",
        "args": {"customer": "c-4"},
        "closestIndex": 0,
        "closestArgs": {"customer": "c-1"},
        "diff": [{"path": "$.customer", "kind": "changed", "expected": "c-1", "actual": "c-4"}],
        "consumedForTool": 0,
        "reason": "no unconsumed fixture matches this call to crm:lookup; closest: "
        'toolResponses[0], 1 path differs: $.customer: recorded "c-1", the call has "c-4"',
    }


def test_the_cursor_reports_the_detail_with_its_own_consumption() -> None:
    cursor = evals.FixtureCursor.of(RECORDED, "fail")
    assert isinstance(cursor.serve("crm:refund", {"customer": "c-1", "amount": 5}), evals.Served)
    missed = cursor.serve("crm:refund", {"customer": "c-1", "amount": 5})
    assert isinstance(missed, evals.Missed)
    # The entry the first call consumed is not offered; the other refund is the closest left.
    assert missed.detail.closest_index == 2
    assert missed.detail.consumed_for_tool == 1
    live = evals.FixtureCursor.of(RECORDED, "live").serve("crm:lookup", {"customer": "c-2"})
    assert isinstance(live, evals.GoLive)
    assert live.detail.closest_index == 0


_tools = st.sampled_from(["a:x", "a:y"])
_args: st.SearchStrategy[JsonValue] = st.sampled_from(
    [{}, {"k": 1}, {"k": 2}, {"k": 1, "j": 0}, {"j": [1]}]
)
_entries = st.lists(
    st.tuples(_tools, _args, st.sampled_from(["exact", "subset"])).map(
        lambda t: entry(t[0], t[1], argsMatch=t[2])
    ),
    max_size=6,
)


@given(_entries, st.frozensets(st.integers(0, 5)), _tools, _args)
def test_the_closest_entry_is_an_unconsumed_entry_for_the_tool_with_fewest_changes(
    entries: list[ToolResponse], consumed: frozenset[int], tool: str, args: JsonValue
) -> None:
    consumed = frozenset(i for i in consumed if i < len(entries))
    detail = evals.closest_entry(entries, consumed, tool, args)
    candidates = [i for i, e in enumerate(entries) if i not in consumed and e.tool == tool]
    if not candidates:
        assert detail.closest_index is None
        return
    assert detail.closest_index in candidates
    for index in candidates:
        other = evals.closest_entry([entries[index]], frozenset(), tool, args)
        assert len(detail.diff) <= len(other.diff)
        if index < detail.closest_index:
            assert len(detail.diff) < len(other.diff)
    # An entry whose args match has no differing path, and the rest always have one.
    matched = evals.args_match(entries[detail.closest_index], args)
    assert (detail.diff == ()) is matched


def test_a_call_to_a_tool_no_entry_is_left_for_is_shown_with_its_own_args() -> None:
    detail = evals.closest_entry(RECORDED, frozenset({0}), "crm:lookup", {"customer": "c-9"})
    assert detail == evals.MissDetail("crm:lookup", {"customer": "c-9"}, None, None, (), 1)
