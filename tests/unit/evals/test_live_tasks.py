"""Which tasks may reach a live tool: what `wopeval eval --offline` refuses (RFC 0244 §D,
RFC 0252 §B/§D, RFC 0081 §D)."""

from __future__ import annotations

from wopeval import evals

from ._builders import golden_task, make_suite

_SUITE = make_suite(
    golden_task("bare"),
    golden_task("fail", fixtures={"toolResponses": []}),
    golden_task("live", fixtures={"toolResponses": [], "onMiss": "live"}),
    golden_task("recorded"),
)


def test_tasks_without_fixtures_or_under_on_miss_live_reach_live_tools() -> None:
    """`recorded` is served its source run's calls under `onMiss: fail` (fixtureRuns)."""
    reaching = evals.tasks_reaching_live_tools(_SUITE, {"recorded"}, {"golden"})
    assert reaching == ["bare", "live"]


def test_under_live_shadow_every_task_reaches_live_tools() -> None:
    reaching = evals.tasks_reaching_live_tools(_SUITE, {"recorded"}, {"golden", "live-shadow"})
    assert reaching == ["bare", "fail", "live", "recorded"]
