"""cli/_render.py: a run whose model calls were priced shows each task's latency and cost."""

from __future__ import annotations

from rich.console import Console

from wopeval import evals
from wopeval.cli._render import result_lines, task_table
from wopeval.wire.suite import parse_suite
from wopeval.wire.summary import EvalSummary


def _summary(cost: float | None) -> EvalSummary:
    suite = parse_suite(
        {
            "suiteId": "unit.cli.evals.spend",
            "version": "1.0.0",
            "modes": ["golden"],
            "tasks": [{"taskId": "only", "input": None,
                       "expected": {"kind": "golden", "match": {"strategy": "exact", "value": 1}}}],
        }
    )  # fmt: skip
    trial = evals.TrialOutcome(passed=True, latency_ms=840, cost_usd=cost)
    return evals.summarise(suite, {"only": [trial]})


def _text(renderable: object) -> str:
    console = Console(width=160, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_priced_runs_get_latency_and_cost_columns_and_lines() -> None:
    summary = _summary(0.0042)
    table = _text(task_table(summary))
    assert "Latency" in table
    assert "Cost" in table
    assert "840 ms" in table
    assert "$0.004200" in table
    lines = _text(result_lines(summary))
    assert "Cost             $0.004200 (model calls, all tasks)" in lines
    assert "Latency          slowest task 840 ms" in lines


def test_unpriced_runs_keep_their_columns() -> None:
    summary = _summary(None)
    assert "Cost" not in _text(task_table(summary))
    assert "Cost " not in _text(result_lines(summary))
