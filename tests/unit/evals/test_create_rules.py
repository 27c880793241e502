"""`evals/_create_rules.py`: RFC 0251 §B–§C and RFC 0252 §B–§C."""

from __future__ import annotations

from typing import Any

import pytest

from wopeval import evals
from wopeval.wire import errors
from wopeval.wire.runs import EvalMode, RunStatus

from ._builders import golden_task, make_suite

HOST: tuple[EvalMode, ...] = ("golden", "regression", "live-shadow")
ALL_MODES: tuple[EvalMode, ...] = ("golden", "rubric", "adversarial", "regression", "live-shadow")
GOLDEN: tuple[EvalMode, ...] = ("golden",)
LIVE_SHADOW: tuple[EvalMode, ...] = ("live-shadow",)
REGRESSION: tuple[EvalMode, ...] = ("regression",)
RUN_ID = "acme/0123456789abcdef0123456789abcdef"


class TestResolveEvalModes:
    def resolve(
        self,
        requested: list[EvalMode] | None,
        suite_modes: tuple[EvalMode, ...] = ("golden", "regression"),
    ) -> tuple[EvalMode, ...]:
        return evals.resolve_eval_modes(requested, suite_modes, HOST, ALL_MODES)

    def test_requested_modes_are_kept_in_order(self) -> None:
        assert self.resolve(["regression", "golden"]) == ("regression", "golden")

    @pytest.mark.parametrize(
        ("requested", "rule"),
        [
            ([], "must not be empty"),
            (["golden", "golden"], "must be distinct"),
            (["live-shadow"], "the suite does not declare"),
        ],
    )
    def test_refusals(self, requested: list[EvalMode], rule: str) -> None:
        with pytest.raises(errors.ValidationFailed, match=rule):
            self.resolve(requested)

    def test_mode_the_host_does_not_advertise(self) -> None:
        with pytest.raises(errors.ValidationFailed, match="this host does not advertise"):
            self.resolve(["rubric"], ("golden", "rubric"))

    def test_default_never_includes_regression(self) -> None:
        # RFC 0251 §B: a baseline needs regression named in evalModes; absent names none.
        assert self.resolve(None) == GOLDEN

    def test_default_drops_live_shadow_when_something_else_runs(self) -> None:
        # The recorded-fixture conformance suites declare golden and live-shadow.
        assert self.resolve(None, ("golden", "live-shadow")) == GOLDEN

    def test_default_keeps_live_shadow_alone(self) -> None:
        assert self.resolve(None, LIVE_SHADOW) == LIVE_SHADOW

    def test_default_respects_the_host_default_set(self) -> None:
        modes = evals.resolve_eval_modes(None, ("golden", "live-shadow"), HOST, LIVE_SHADOW)
        assert modes == LIVE_SHADOW

    def test_empty_default_is_refused(self) -> None:
        with pytest.raises(errors.ValidationFailed, match="by default"):
            self.resolve(None, REGRESSION)
        with pytest.raises(errors.ValidationFailed, match="by default"):
            self.resolve(None, ("rubric",))


class TestBaselineFields:
    def test_regression_with_baseline(self) -> None:
        evals.check_baseline_fields(("golden", "regression"), RUN_ID)

    def test_neither(self) -> None:
        evals.check_baseline_fields(GOLDEN, None)

    def test_baseline_without_regression(self) -> None:
        with pytest.raises(errors.ValidationFailed, match="needs regression") as caught:
            evals.check_baseline_fields(GOLDEN, RUN_ID)
        assert RUN_ID not in caught.value.message

    def test_regression_without_baseline(self) -> None:
        with pytest.raises(errors.ValidationFailed, match="needs baselineRunId"):
            evals.check_baseline_fields(REGRESSION, None)

    def test_baseline_with_absent_eval_modes(self) -> None:
        # RFC 0251 §B: absent evalModes resolves to the default, which never has regression.
        modes = evals.resolve_eval_modes(None, ("golden", "regression"), HOST, ALL_MODES)
        with pytest.raises(errors.ValidationFailed, match="needs regression"):
            evals.check_baseline_fields(modes, RUN_ID)


class TestEvalOnlyFields:
    def test_all_allowed_with_mode_eval(self) -> None:
        evals.check_eval_only_fields(True, ["golden"], RUN_ID, {"t": RUN_ID})

    def test_none_present_without_mode(self) -> None:
        evals.check_eval_only_fields(False, None, None, None)

    @pytest.mark.parametrize(
        ("fields", "name"),
        [
            ({"eval_modes": []}, "evalModes"),
            ({"baseline_run_id": RUN_ID}, "baselineRunId"),
            ({"fixture_runs": {}}, "fixtureRuns"),
            ({"fixture_runs": {"record": RUN_ID}}, "fixtureRuns"),
        ],
    )
    def test_refused_without_mode_eval(self, fields: dict[str, Any], name: str) -> None:
        args = {"eval_modes": None, "baseline_run_id": None, "fixture_runs": None, **fields}
        with pytest.raises(
            errors.ValidationFailed, match=f'{name} is only valid with mode "eval"'
        ) as caught:
            evals.check_eval_only_fields(False, **args)
        assert RUN_ID not in caught.value.message


class TestFixtureRunsFields:
    suite = make_suite(
        golden_task("record"),
        golden_task("seeded", fixtures={"memorySeed": [{"k": "v"}]}),
        golden_task("empty-responses", fixtures={"toolResponses": []}),
        golden_task("on-miss-only", fixtures={"onMiss": "live"}),
        golden_task(
            "with-responses",
            fixtures={"toolResponses": [{"tool": "a:b", "response": 1}]},
        ),
    )

    def test_absent_is_fine(self) -> None:
        evals.check_fixture_runs_fields(None, self.suite, ("golden", "live-shadow"))

    @pytest.mark.parametrize("task_id", ["record", "seeded"])
    def test_named_task_without_responses_or_on_miss(self, task_id: str) -> None:
        evals.check_fixture_runs_fields({task_id: RUN_ID}, self.suite, GOLDEN)

    def test_no_keys(self) -> None:
        with pytest.raises(errors.ValidationFailed, match="at least one task"):
            evals.check_fixture_runs_fields({}, self.suite, GOLDEN)

    def test_unknown_key_is_named_when_it_looks_like_a_task_id(self) -> None:
        with pytest.raises(errors.ValidationFailed, match="'nope' is not a taskId"):
            evals.check_fixture_runs_fields({"nope": RUN_ID}, self.suite, GOLDEN)

    def test_unknown_key_with_a_run_id_shape_is_not_echoed(self) -> None:
        with pytest.raises(errors.ValidationFailed, match="is not a taskId") as caught:
            evals.check_fixture_runs_fields({RUN_ID: RUN_ID}, self.suite, GOLDEN)
        assert RUN_ID not in caught.value.message

    @pytest.mark.parametrize("task_id", ["empty-responses", "on-miss-only", "with-responses"])
    def test_named_task_carrying_responses_or_on_miss(self, task_id: str) -> None:
        with pytest.raises(errors.ValidationFailed, match="toolResponses or onMiss") as caught:
            evals.check_fixture_runs_fields({task_id: RUN_ID}, self.suite, GOLDEN)
        assert RUN_ID not in caught.value.message

    def test_live_shadow(self) -> None:
        with pytest.raises(errors.ValidationFailed, match="live-shadow"):
            evals.check_fixture_runs_fields({"record": RUN_ID}, self.suite, LIVE_SHADOW)


def baseline(**overrides: Any) -> evals.BaselineFacts:
    fields: dict[str, Any] = {
        "tenant": "acme",
        "is_eval": True,
        "suite_id": "conformance.openwop.evals.regression",
        "status": RunStatus.COMPLETED,
        "has_summary": True,
    }
    return evals.BaselineFacts(**{**fields, **overrides})


class TestUsableBaseline:
    def check(self, facts: evals.BaselineFacts | None) -> bool:
        return evals.is_usable_baseline(
            facts, tenant="acme", suite_id="conformance.openwop.evals.regression"
        )

    def test_usable(self) -> None:
        assert self.check(baseline())

    @pytest.mark.parametrize(
        "overrides",
        [
            {"tenant": "globex"},
            {"is_eval": False, "suite_id": None},
            {"suite_id": "acme.evals.other"},
            {"status": RunStatus.RUNNING},
            {"status": RunStatus.FAILED},
            {"status": RunStatus.CANCELLED},
            {"has_summary": False},
        ],
    )
    def test_unusable(self, overrides: dict[str, Any]) -> None:
        assert not self.check(baseline(**overrides))

    def test_missing(self) -> None:
        assert not self.check(None)


def source(**overrides: Any) -> evals.SourceFacts:
    fields: dict[str, Any] = {
        "tenant": "acme",
        "status": RunStatus.COMPLETED,
        "agent_id": "conformance.scripted-agent",
        "invocation_count": 1,
        "all_calls_held": True,
        "has_failed_call": False,
    }
    return evals.SourceFacts(**{**fields, **overrides})


class TestUsableSource:
    def check(self, facts: evals.SourceFacts | None, *, fixture_errors: bool = True) -> bool:
        return evals.is_usable_source(
            facts,
            tenant="acme",
            agent_id="conformance.scripted-agent",
            fixture_errors_enabled=fixture_errors,
        )

    @pytest.mark.parametrize("status", [RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED])
    def test_terminal_runs_are_usable(self, status: RunStatus) -> None:
        assert self.check(source(status=status))

    @pytest.mark.parametrize(
        "overrides",
        [
            {"tenant": "globex"},
            {"status": RunStatus.RUNNING},
            {"status": RunStatus.PENDING},
            {"status": RunStatus.CANCELLING},
            {"invocation_count": 0},
            {"all_calls_held": False},
            {"agent_id": "another-agent"},
        ],
    )
    def test_unusable(self, overrides: dict[str, Any]) -> None:
        assert not self.check(source(**overrides))

    def test_missing(self) -> None:
        assert not self.check(None)

    def test_failed_call_needs_fixture_errors(self) -> None:
        assert self.check(source(has_failed_call=True), fixture_errors=True)
        assert not self.check(source(has_failed_call=True), fixture_errors=False)
        assert self.check(source(), fixture_errors=False)
