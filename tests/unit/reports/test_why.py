"""reports/_why.py: the one layout of a failure every output shares, over the routes' shapes."""

from __future__ import annotations

from wopeval import evals
from wopeval.reports import (
    actual_text,
    change_rows,
    cut,
    decisions_text,
    detail_text,
    explained_task_ids,
    marks,
    miss_headline,
    needs_explaining,
    trace_rows,
)
from wopeval.wire.suite import parse_suite
from wopeval.wire.summary import EvalSummary, TaskRegression, Verdict
from wopeval.wire.task_detail import TaskLine

from ._details import DETAILS, HOSTILE, run_why


def _line(passed: bool, trials: int, passed_trials: int) -> TaskLine:
    return TaskLine(
        taskId="t", scored=True, passed=passed, score=passed_trials / trials, trials=trials,
        passedTrials=passed_trials, fixtureMissCount=0, reason="r",
    )  # fmt: skip


def test_a_task_needs_explaining_when_it_failed_regressed_or_lost_a_trial() -> None:
    assert needs_explaining(_line(False, 1, 0), None)
    assert needs_explaining(_line(True, 1, 1), Verdict.REGRESSED)
    assert needs_explaining(_line(True, 4, 3), None)  # passed under `any`, one trial failed
    assert not needs_explaining(_line(True, 4, 4), Verdict.UNCHANGED)
    assert not needs_explaining(_line(True, 1, 1), "improved")


def test_the_trace_marks_each_call_replayed_live_or_miss() -> None:
    wrong = trace_rows(DETAILS["wrong"].trialDetails[0].calls)
    assert [(r.tool, r.served, r.delegate) for r in wrong] == [
        ("weather:lookup", "replayed", False),
        ("weather:alerts", "live", True),
    ]
    assert (wrong[0].args, wrong[0].result, wrong[0].duration) == (
        '{"city":"Bergen"}',
        '{"temp":4}',
        "1 ms",
    )
    (missed,) = trace_rows(DETAILS["missed"].trialDetails[0].calls)
    assert (missed.served, missed.status) == ("MISS", "error")
    assert missed.result == "fixture_miss: no unconsumed fixture"


def test_a_diff_row_per_path_with_its_sign_and_absent_sides() -> None:
    rows = change_rows(DETAILS["wrong"].trialDetails[0].grade.diff or [])  # type: ignore[union-attr]
    assert [(r.sign, r.path, r.expected, r.actual) for r in rows] == [
        ("~", "$.city", '"Oslo"', '"Bergen"'),
        ("+", "$.note", "(absent)", '"' + HOSTILE + '"'),
    ]


def test_a_miss_names_its_closest_recording() -> None:
    (miss,) = DETAILS["missed"].trialDetails[0].misses
    assert miss_headline(miss) == "call #0 to shop:order: closest recording toolResponses[0]"
    alone = miss.model_copy(update={"closest": None})
    assert miss_headline(alone) == "call #0 to shop:order: no recording names shop:order"
    again = miss.model_copy(update={"consumedForTool": 2})
    assert "(2 recording(s) of shop:order already used by this trial)" in miss_headline(again)


def test_the_plain_text_holds_the_diff_the_trace_and_the_miss() -> None:
    wrong = detail_text(DETAILS["wrong"])
    assert '  expected: json-match {"city":"Oslo"}' in wrong
    assert '    ~ $.city: "Oslo" → "Bergen"' in wrong
    assert '    #0 weather:lookup [replayed] ok {"city":"Bergen"} → {"temp":4}' in wrong
    assert "    #1 weather:alerts (delegate) [live] ok {} → []" in wrong
    missed = detail_text(DETAILS["missed"])
    assert "  miss: call #0 to shop:order: closest recording toolResponses[0]" in missed
    assert '    recorded: {"order_id":"A-1"}' in missed
    assert "      + $.express: (absent) → true" in missed
    raised = detail_text(DETAILS["raised"])
    assert "  raised:   KeyError: 'city'" in raised
    assert "  actual:   none: the agent raised KeyError" in raised


def test_a_hash_agents_trial_shows_hashes_never_content() -> None:
    (trial,) = DETAILS["hashed"].trialDetails
    assert actual_text(trial).startswith("sha256:" + "6" * 64)
    (call,) = trace_rows(trial.calls)
    assert call.args == "sha256:" + "7" * 64
    assert decisions_text(DETAILS["hashed"]).startswith("trial 0 decision: sha256:")


def test_long_values_are_cut_saying_how_long_they_were() -> None:
    assert cut("abcdef", 4) == "abcd… (6 characters)"
    assert cut("abc", 4) == "abc"
    assert cut("abcdef", None) == "abcdef"


def _summary() -> EvalSummary:
    suite = parse_suite(
        {"suiteId": "unit.why.evals.s", "version": "1.0.0", "modes": ["golden"],
         "tasks": [{"taskId": t, "input": None,
                    "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "x"}}}
                   for t in ("wrong", "fine")]}
    )  # fmt: skip
    return evals.summarise(
        suite,
        {
            "wrong": [evals.TrialOutcome(passed=False, latency_ms=1)],
            "fine": [evals.TrialOutcome(passed=True, latency_ms=1)],
        },
    )


def test_the_tasks_to_explain_take_the_summarys_verdicts() -> None:
    why = run_why("wrong", "fine")
    assert explained_task_ids(_summary(), why.listing) == ["wrong"]
    base = _summary().model_copy(
        update={
            "tasks": [t.model_copy(update={"passed": True, "score": 1.0}) for t in _summary().tasks]
        }
    )
    judged = evals.with_regression(_summary(), "t/" + "0" * 32, base)
    assert explained_task_ids(judged, why.listing) == ["wrong"]


def test_marks_only_for_multi_trial_pairs() -> None:
    pair = TaskRegression(taskId="t", baselineScore=1.0, score=0.5, delta=-0.5,
                          verdict=Verdict.INCONCLUSIVE, pValue=0.4286, flaky=True)  # fmt: skip
    assert marks(pair) == ["p=0.429", "flaky"]
    single = pair.model_copy(update={"pValue": None, "flaky": None})
    assert marks(single) == []
    assert marks(None) == []
