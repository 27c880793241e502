"""evals/_models.py: the request's identity, consume-once replay, derivation and cost."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import JsonValue

from wopeval import evals

USER: JsonValue = {"role": "user", "content": "hi"}
REQUEST: dict[str, JsonValue] = {
    "model": "m",
    "messages": [USER],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    "temperature": 0.0,
}


def test_the_hash_ignores_transport_keys_and_key_order_but_nothing_else() -> None:
    reordered = dict(reversed(list(REQUEST.items())))
    streamed: dict[str, JsonValue] = {
        **REQUEST,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert evals.model_request_hash(REQUEST) == evals.model_request_hash(reordered)
    assert evals.model_request_hash(REQUEST) == evals.model_request_hash(streamed)
    assert evals.canonical_model_request(streamed) == REQUEST
    # 0.0 and 0 are the same JSON number (JCS); another temperature is another request.
    assert evals.model_request_hash({**REQUEST, "temperature": 0}) == evals.model_request_hash(
        REQUEST
    )
    assert evals.model_request_hash({**REQUEST, "temperature": 0.5}) != evals.model_request_hash(
        REQUEST
    )
    changed: dict[str, JsonValue] = {
        **REQUEST,
        "messages": [{"role": "system", "content": "x"}, USER],
    }
    assert evals.model_request_hash(changed) != evals.model_request_hash(REQUEST)


def _exchange(
    agent: str, request_hash: str, *, delegate: bool = False, ok: bool = True
) -> evals.RecordedExchange:
    return evals.RecordedExchange(
        invocation_id="i",
        agent_id=agent,
        is_delegate=delegate,
        ordinal=0,
        request_hash=request_hash,
        status="ok" if ok else "error",
        response={"content": request_hash},
    )


def test_derived_answers_are_the_agents_own_answered_exchanges_in_order() -> None:
    exchanges = [
        _exchange("a", "h1"),
        _exchange("a", "h2", ok=False),  # a 429: its retry is the exchange that answered
        _exchange("a", "h2"),
        _exchange("a", "h3", delegate=True),
        _exchange("b", "h4"),
    ]
    derived = evals.derive_model_fixtures(exchanges, "a")
    assert [(f.request_hash, f.response) for f in derived] == [
        ("h1", {"content": "h1"}),
        ("h2", {"content": "h2"}),
    ]
    assert evals.ModelFixture.from_json(derived[0].to_json()) == derived[0]


def test_the_cursor_serves_each_answer_once_in_order_and_counts_misses() -> None:
    fixtures = [evals.ModelFixture("h", {"n": 1}), evals.ModelFixture("h", {"n": 2})]
    cursor = evals.ModelReplayCursor(fixtures)
    first, second = cursor.serve("h"), cursor.serve("h")
    assert first is not None
    assert first.response == {"n": 1}
    assert second is not None
    assert second.response == {"n": 2}
    assert cursor.serve("h") is None
    assert cursor.serve("other") is None
    assert cursor.miss_count == 2
    cursor.reset()
    again = cursor.serve("h")
    assert again is not None
    assert again.response == {"n": 1}
    assert cursor.miss_count == 0


@given(
    st.lists(st.sampled_from(["a", "b", "c"]), max_size=8),
    st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=8),
)
def test_a_cursor_serves_no_more_of_a_hash_than_were_recorded(
    recorded: list[str], asked: list[str]
) -> None:
    cursor = evals.ModelReplayCursor([evals.ModelFixture(h, h) for h in recorded])
    served = [h for h in asked if cursor.serve(h) is not None]
    for value in set(asked):
        assert served.count(value) == min(asked.count(value), recorded.count(value))
    assert cursor.miss_count == len(asked) - len(served)


def test_the_cost_uses_the_reported_model_then_the_requested_one() -> None:
    prices = {"m": evals.ModelPrice(input_per_mtok=2.0, output_per_mtok=8.0)}
    cost = evals.exchange_cost(
        prices,
        reported_model="m-2026",
        requested_model="m",
        prompt_tokens=1000,
        completion_tokens=500,
    )
    assert cost == pytest.approx((1000 * 2.0 + 500 * 8.0) / 1_000_000)
    exact = {**prices, "m-2026": evals.ModelPrice(1.0, 1.0)}
    assert (
        evals.exchange_cost(
            exact,
            reported_model="m-2026",
            requested_model="m",
            prompt_tokens=10**6,
            completion_tokens=0,
        )
        == 1.0
    )
    assert (
        evals.exchange_cost(
            prices, reported_model="x", requested_model="y", prompt_tokens=1, completion_tokens=1
        )
        is None
    )


def test_an_empty_model_id_names_no_model_to_price() -> None:
    prices = {"": evals.ModelPrice(input_per_mtok=1.0, output_per_mtok=1.0)}
    cost = evals.exchange_cost(
        prices, reported_model="", requested_model=None, prompt_tokens=1, completion_tokens=1
    )
    assert cost is None
