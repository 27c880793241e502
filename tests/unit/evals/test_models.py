"""evals/_models.py and _model_miss.py: the request's identity, consume-once replay by API,
derivation, the nearest recorded request of a miss, and cost."""

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


def test_the_hash_ignores_key_order_but_nothing_else() -> None:
    reordered = dict(reversed(list(REQUEST.items())))
    assert evals.model_request_hash(REQUEST) == evals.model_request_hash(reordered)
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
    agent: str, request_hash: str, *, delegate: bool = False, ok: bool = True, ordinal: int = 0
) -> evals.RecordedExchange:
    return evals.RecordedExchange(
        invocation_id="i",
        agent_id=agent,
        is_delegate=delegate,
        ordinal=ordinal,
        request_hash=request_hash,
        status="ok" if ok else "error",
        response={"content": request_hash},
        api="responses",
        request={"input": request_hash},
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
    assert {(f.api, str(f.request)) for f in derived} == {
        ("responses", "{'input': 'h1'}"),
        ("responses", "{'input': 'h2'}"),
    }
    assert evals.ModelFixture.from_json(derived[0].to_json()) == derived[0]


def test_a_copy_kept_before_apis_and_requests_were_reads_as_chat() -> None:
    kept = evals.ModelFixture.from_json({"requestHash": "h", "response": {"n": 1}})
    assert (kept.api, kept.request, kept.ordinal) == ("chat", None, None)
    assert evals.ModelReplayCursor([kept]).serve("chat", "h") == kept


def test_the_cursor_serves_each_answer_once_in_order_and_counts_misses() -> None:
    fixtures = [evals.ModelFixture("h", {"n": 1}), evals.ModelFixture("h", {"n": 2})]
    cursor = evals.ModelReplayCursor(fixtures)
    first, second = cursor.serve("chat", "h"), cursor.serve("chat", "h")
    assert first is not None
    assert first.response == {"n": 1}
    assert second is not None
    assert second.response == {"n": 2}
    assert cursor.serve("chat", "h") is None
    assert cursor.serve("chat", "other") is None
    assert cursor.miss_count == 2
    cursor.reset()
    again = cursor.serve("chat", "h")
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
    served = [h for h in asked if cursor.serve("chat", h) is not None]
    for value in set(asked):
        assert served.count(value) == min(asked.count(value), recorded.count(value))
    assert cursor.miss_count == len(asked) - len(served)


def test_an_answer_serves_only_a_request_of_its_own_api() -> None:
    cursor = evals.ModelReplayCursor([evals.ModelFixture("h", {"n": 1}, api="messages")])
    assert cursor.serve("chat", "h") is None
    served = cursor.serve("messages", "h")
    assert served is not None
    assert served.response == {"n": 1}


def _recorded(ordinal: int, content: str, api: str = "chat") -> evals.ModelFixture:
    request: JsonValue = {"model": "m", "messages": [{"role": "user", "content": content}]}
    return evals.ModelFixture(f"h{ordinal}-{content}", {}, api, request, ordinal)


def _sent(content: str) -> JsonValue:
    return {"model": "m", "messages": [{"role": "user", "content": content}]}


def test_a_miss_names_the_recorded_request_of_its_position_and_the_diff() -> None:
    cursor = evals.ModelReplayCursor(
        [_recorded(0, "a"), _recorded(1, "changed prompt"), _recorded(2, "b")]
    )
    miss = cursor.nearest("chat", _sent("changed prompt!"), ordinal=2, index=2)
    # The same position wins over a request with fewer differences elsewhere: it is what
    # the source sent at this point.
    assert (miss.ordinal, miss.nearest_ordinal, miss.nearest_hash) == (2, 2, "h2-b")
    assert [c.to_json() for c in miss.diff] == [
        {"path": "$.messages[0].content", "kind": "changed", "expected": "b",
         "actual": "changed prompt!"},
    ]  # fmt: skip
    assert miss.reason.endswith(
        "(model exchange 2); nearest recorded request: exchange 2, "
        "1 path differs: $.messages[0].content"
    )
    assert "changed prompt!" not in miss.reason, "the reason carries no content"
    assert '"changed prompt!"' in miss.described()
    assert miss.to_json()["nearest"] == {"ordinal": 2, "requestHash": "h2-b"}


def test_without_its_position_a_miss_names_the_fewest_differences_among_unconsumed() -> None:
    fixtures = [_recorded(0, "x"), _recorded(1, "near"), _recorded(1, "far away"),
                _recorded(0, "y", api="messages")]  # fmt: skip
    cursor = evals.ModelReplayCursor(fixtures)
    assert cursor.serve("chat", "h1-near") is not None
    sent: JsonValue = {"model": "n", "messages": [{"role": "user", "content": "far away"}]}
    miss = cursor.nearest("chat", sent, ordinal=5, index=5)
    # `near` is consumed, the messages-API answer could never serve a chat request.
    assert (miss.nearest_ordinal, miss.nearest_hash, miss.consumed) == (1, "h1-far away", 1)
    assert [(c.path, c.kind) for c in miss.diff] == [("$.model", "changed")]


def test_a_miss_with_nothing_left_says_how_many_were_served() -> None:
    cursor = evals.ModelReplayCursor([_recorded(0, "a")])
    assert cursor.serve("chat", "h0-a") is not None
    miss = cursor.nearest("chat", _sent("a"), ordinal=1, index=1)
    assert (miss.nearest_hash, miss.diff) == (None, ())
    assert miss.reason.endswith("; no recorded answer is left (1 served)")
    assert miss.to_json()["nearest"] is None


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
