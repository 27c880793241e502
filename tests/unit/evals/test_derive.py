"""`evals/_derive.py`: RFC 0252 §D fixtures from recorded calls."""

from __future__ import annotations

from _recorded_calls import AGENT, recorded
from wopeval import evals
from wopeval.wire.suite import ToolResponse


def test_one_exact_entry_per_call_in_sequence_order() -> None:
    calls = [
        recorded(9, inputs={"op": "read", "key": "k"}, invocation_id="inv-2"),
        recorded(4),
    ]
    entries = evals.derive_fixtures(calls, AGENT)
    assert [e.model_dump(exclude_unset=True) for e in entries] == [
        {
            "tool": "conformance.eval:counter",
            "args": {"op": "inc", "key": "k"},
            "argsMatch": "exact",
            "response": {"key": "k", "count": 4},
        },
        {
            "tool": "conformance.eval:counter",
            "args": {"op": "read", "key": "k"},
            "argsMatch": "exact",
            "response": {"key": "k", "count": 9},
        },
    ]


def test_other_agents_and_delegates_are_excluded() -> None:
    calls = [
        recorded(1, agent_id="someone-else"),
        recorded(2, is_delegate=True),
        recorded(3),
    ]
    entries = evals.derive_fixtures(calls, AGENT)
    assert [e.response for e in entries] == [{"key": "k", "count": 3}]
    assert [c.sequence for c in evals.own_calls(calls, AGENT)] == [3]


def test_failed_and_never_ran_calls_become_error_entries() -> None:
    failure = {"code": "tool_error", "message": "boom"}
    calls = [
        recorded(1, status="error", result=None, error=failure),
        recorded(2, status="forbidden", result=None, error={"code": "forbidden"}),
        recorded(3, status="rate_limited", result=None, error=None, duration_ms=None),
    ]
    entries = evals.derive_fixtures(calls, AGENT)
    # Written out as the derived copy stores them: `argsMatch` present, the args as passed.
    assert [e.model_dump(exclude_unset=True) for e in entries] == [
        {"tool": "conformance.eval:counter", "args": {"op": "inc", "key": "k"},
         "argsMatch": "exact", "response": response, "isError": True}
        for response in (failure, {"code": "forbidden"}, {"code": "rate_limited"})
    ]  # fmt: skip


def test_fixture_served_calls_derive_too() -> None:
    # RFC 0252 UQ 4: an eval run may be a source; the agent saw what it saw.
    entries = evals.derive_fixtures([recorded(1, served_by="fixture")], AGENT)
    assert len(entries) == 1


def test_null_inputs_stay_a_value() -> None:
    (entry,) = evals.derive_fixtures([recorded(1, inputs=None)], AGENT)
    assert entry.has_args
    assert entry.args is None


def test_has_failed_call_counts_own_calls_only() -> None:
    delegate_failure = recorded(1, is_delegate=True, status="error", error={"code": "x"})
    assert not evals.has_failed_call([delegate_failure, recorded(2)], AGENT)
    assert evals.has_failed_call([recorded(3, status="forbidden", error={})], AGENT)
    assert not evals.has_failed_call([], AGENT)


def test_derived_entries_replay_through_the_cursor() -> None:
    source = [
        recorded(1, inputs={"op": "inc", "key": "k"}, result={"key": "k", "count": 1}),
        recorded(2, inputs={"op": "read", "key": "k"}, result={"key": "k", "count": 1}),
    ]
    entries: list[ToolResponse] = evals.derive_fixtures(source, AGENT)
    replay = evals.FixtureCursor.of(entries, on_miss="fail")
    served = [
        replay.serve("conformance.eval:counter", {"key": "k", "op": "inc"}),
        replay.serve("conformance.eval:counter", {"op": "read", "key": "k"}),
    ]
    assert [s.entry.response for s in served if isinstance(s, evals.Served)] == [
        {"key": "k", "count": 1},
        {"key": "k", "count": 1},
    ]
    assert replay.miss_count == 0


def test_unvalidated_entries_equal_validated_ones() -> None:
    # `fixtures_of` skips validation for speed: it must build exactly what validating
    # the same documents builds, fields set included (`has_args`, `exclude_unset`).
    calls = [
        recorded(1),
        recorded(2, inputs=None, result=None),
        recorded(3, status="error", result=None, error={"code": "tool_error", "message": "boom"}),
        recorded(4, status="rate_limited", result=None, error=None),
    ]
    documents = evals.derive_fixture_documents(calls, AGENT)
    built = evals.fixtures_of(documents)
    validated = [ToolResponse.model_validate(document) for document in documents]
    assert built == validated
    assert [e.model_fields_set for e in built] == [e.model_fields_set for e in validated]
    assert [e.model_dump(mode="json", exclude_unset=True) for e in validated] == documents
