"""Exit-code precedence (cli/_exit.py): 4 > 2 > 1 > 3 > 0, from real summaries."""

from __future__ import annotations

import pytest

from wopeval import evals
from wopeval.cli._exit import ExitCode, exit_code_for
from wopeval.client import DEFAULT_ALPHA
from wopeval.wire.suite import Suite, parse_suite
from wopeval.wire.summary import EvalSummary


def _suite(pass_score: float) -> Suite:
    return parse_suite(
        {
            "suiteId": "unit.cli.evals.exit",
            "version": "1.0.0",
            "modes": ["golden", "regression"],
            "thresholds": {"passScore": pass_score},
            "tasks": [
                {"taskId": t, "input": None, "expected": {"kind": "golden",
                 "match": {"strategy": "exact", "value": "x"}}}
                for t in ("a", "b")
            ],
        }
    )  # fmt: skip


def _run(suite: Suite, passes: dict[str, list[bool]]) -> EvalSummary:
    return evals.summarise(
        suite,
        {t: [evals.TrialOutcome(passed=p, latency_ms=1) for p in ps] for t, ps in passes.items()},
    )


def _judged(
    pass_score: float, base: dict[str, list[bool]], cand: dict[str, list[bool]]
) -> EvalSummary:
    suite = _suite(pass_score)
    return evals.with_regression(_run(suite, cand), "t/" + "0" * 16, _run(suite, base))


ALL = [True] * 4
HALF = [True, False] * 2


@pytest.mark.parametrize(
    ("summary", "strict", "expected"),
    [
        pytest.param(_run(_suite(1.0), {"a": [True], "b": [True]}), False, ExitCode.OK, id="pass"),
        pytest.param(
            _run(_suite(1.0), {"a": [True], "b": [False]}),
            False,
            ExitCode.THRESHOLD_FAILED,
            id="threshold",
        ),
        pytest.param(
            _judged(1.0, {"a": [True], "b": [True]}, {"a": [True], "b": [False]}),
            False,
            ExitCode.REGRESSED,
            id="regression-beats-threshold",
        ),
        pytest.param(
            _judged(0.5, {"a": [True], "b": [True]}, {"a": [True], "b": [False]}),
            True,
            ExitCode.REGRESSED,
            id="regression-thresholds-pass",
        ),
        pytest.param(
            _judged(0.5, {"a": ALL, "b": ALL}, {"a": ALL, "b": HALF}),
            True,
            ExitCode.INCONCLUSIVE,
            id="inconclusive-strict",
        ),
        pytest.param(
            _judged(0.5, {"a": ALL, "b": ALL}, {"a": ALL, "b": HALF}),
            False,
            ExitCode.OK,
            id="inconclusive-lenient",
        ),
        pytest.param(
            _judged(1.0, {"a": ALL, "b": ALL}, {"a": ALL, "b": HALF}),
            True,
            ExitCode.THRESHOLD_FAILED,
            id="threshold-beats-inconclusive",
        ),
        pytest.param(
            _judged(1.0, {"a": [False], "b": [True]}, {"a": [True], "b": [True]}),
            True,
            ExitCode.OK,
            id="improved",
        ),
    ],
)
def test_exit_code_precedence(summary: EvalSummary, strict: bool, expected: ExitCode) -> None:
    assert exit_code_for(summary, strict=strict) is expected


def test_the_cli_default_alpha_is_the_domain_default() -> None:
    assert DEFAULT_ALPHA == evals.DEFAULT_ALPHA
