"""`evals/_create_rules.py`: RFC 0251 §B–§C and RFC 0252 §B–§C."""

from __future__ import annotations

from typing import Any

import pytest

from wopeval import evals
from wopeval.wire import errors
from wopeval.wire.eval_options import EvalMode
from wopeval.wire.runs import RunStatus

from ._builders import golden_task, make_suite

HOST: tuple[EvalMode, ...] = ("golden", "regression", "live-shadow")
ALL_MODES: tuple[EvalMode, ...] = ("golden", "rubric", "adversarial", "regression", "live-shadow")
GOLDEN: tuple[EvalMode, ...] = ("golden",)
LIVE_SHADOW: tuple[EvalMode, ...] = ("live-shadow",)
REGRESSION: tuple[EvalMode, ...] = ("regression",)
RUN_ID = "acme/0123456789abcdef0123456789abcdef"


def refusal(call: Any) -> str:
    """The message of the `ValidationFailed` that `call()` raises."""
    with pytest.raises(errors.ValidationFailed) as caught:
        call()
    message: str = caught.value.message
    assert RUN_ID not in message
    return message


class TestResolveEvalModes:
    def resolve(
        self,
        requested: list[EvalMode] | None,
        suite_modes: tuple[EvalMode, ...] = ("golden", "regression"),
    ) -> tuple[EvalMode, ...]:
        return evals.resolve_eval_modes(requested, suite_modes, HOST, ALL_MODES)

    def test_requested_modes_are_kept_in_order(self) -> None:
        assert self.resolve(["regression", "golden"]) == ("regression", "golden")

    def test_every_mode_of_both_may_be_requested(self) -> None:
        assert self.resolve(list(HOST), HOST) == HOST

    @pytest.mark.parametrize(
        ("requested", "message"),
        [
            ([], "evalModes must not be empty"),
            (["golden", "golden"], "evalModes must be distinct"),
            (["live-shadow"], "evalModes names a mode the suite does not declare"),
        ],
    )
    def test_refusals(self, requested: list[EvalMode], message: str) -> None:
        assert refusal(lambda: self.resolve(requested)) == message

    def test_mode_the_host_does_not_advertise(self) -> None:
        assert refusal(lambda: self.resolve(["rubric"], ("golden", "rubric"))) == (
            "evalModes names a mode this host does not advertise"
        )

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

    @pytest.mark.parametrize("suite_modes", [REGRESSION, ("rubric",)])
    def test_empty_default_is_refused(self, suite_modes: tuple[EvalMode, ...]) -> None:
        assert refusal(lambda: self.resolve(None, suite_modes)) == (
            "evalModes is absent and the suite declares no mode this host runs by default"
        )


class TestBaselineFields:
    def test_regression_with_baseline(self) -> None:
        evals.check_baseline_fields(("golden", "regression"), RUN_ID)

    def test_neither(self) -> None:
        evals.check_baseline_fields(GOLDEN, None)

    def test_baseline_without_regression(self) -> None:
        assert refusal(lambda: evals.check_baseline_fields(GOLDEN, RUN_ID)) == (
            "baselineRunId needs regression among the run's modes"
        )

    def test_regression_without_baseline(self) -> None:
        assert refusal(lambda: evals.check_baseline_fields(REGRESSION, None)) == (
            "regression among the run's modes needs baselineRunId"
        )

    def test_baseline_with_absent_eval_modes(self) -> None:
        # RFC 0251 §B: absent evalModes resolves to the default, which never has regression.
        modes = evals.resolve_eval_modes(None, ("golden", "regression"), HOST, ALL_MODES)
        assert refusal(lambda: evals.check_baseline_fields(modes, RUN_ID)) == (
            "baselineRunId needs regression among the run's modes"
        )


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
        message = refusal(lambda: evals.check_eval_only_fields(False, **args))
        assert message == f'{name} is only valid with mode "eval"'


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

    def check(self, runs: dict[str, str], modes: tuple[EvalMode, ...] = GOLDEN) -> str:
        return refusal(lambda: evals.check_fixture_runs_fields(runs, self.suite, modes))

    def test_no_keys(self) -> None:
        assert self.check({}) == "fixtureRuns must name at least one task"

    @pytest.mark.parametrize("key", ["nope", "a" * 64])
    def test_unknown_key_is_named_when_it_looks_like_a_task_id(self, key: str) -> None:
        assert self.check({key: RUN_ID}) == f"fixtureRuns key '{key}' is not a taskId of the suite"

    # A run id (it has '/') or an over-long key is never echoed: it may be a foreign id.
    @pytest.mark.parametrize("key", [RUN_ID, "a" * 65, "Nope"])
    def test_unknown_key_without_a_task_id_shape_is_not_echoed(self, key: str) -> None:
        message = self.check({key: RUN_ID})
        assert message == "fixtureRuns key (not a taskId) is not a taskId of the suite"

    @pytest.mark.parametrize("task_id", ["empty-responses", "on-miss-only", "with-responses"])
    def test_named_task_carrying_responses_or_on_miss(self, task_id: str) -> None:
        assert self.check({task_id: RUN_ID}) == (
            f"fixtureRuns names task '{task_id}', whose suite fixtures carry "
            "toolResponses or onMiss"
        )

    def test_live_shadow(self) -> None:
        assert self.check({"record": RUN_ID}, LIVE_SHADOW) == (
            "fixtureRuns cannot be used with live-shadow"
        )


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
