"""Every exit code of `wopeval eval` / `compare`, each from a real run on a real host."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from _processes import free_port
from wopeval.cli.main import app

from ._junit import outcomes, suite_counts
from ._support import ServedHost, run_cli

BASIC = "cli.test.evals.basic@1.0.0"
COIN = "suite://cli.test.evals.coin@1.0.0"
BETA_REGRESSED = (
    '  beta  regressed — exact: the decision "wrong" differs from the expected value "b"'
)
COIN_FLAKY = (
    "  coin  inconclusive · p=0.429 · flaky — passed (2 of 4 trials failed: exact: the decision "
    '"wrong" differs from the expected value "heads") · more trials of this run alone would '
    "not decide it (up to 200); 6 more on each side, the baseline too, would"
)
"""The reason line of the coin task, 2/4 against 4/4: Fisher's p ≈ 0.43, Holm over one task;
no number of candidate trials alone outweighs a baseline of 4 (evals/_more_trials.py)."""


@pytest.fixture(scope="module")
def basic_baseline(served: ServedHost, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A passing eval of the basic suite by `cli.good`: the baseline later runs compare with."""
    out = tmp_path_factory.mktemp("baseline") / "baseline.json"
    result = served.cli("eval", BASIC, "--agent", "cli.good", "--json", str(out))
    assert result.code == 0, result.stderr
    document = result.json_file(out)
    assert document["exitCode"] == 0
    assert document["summary"]["passedCount"] == 3
    return str(document["runId"])


def test_threshold_failure_exits_1(served: ServedHost, tmp_path: Path) -> None:
    junit = tmp_path / "threshold.xml"
    result = served.cli("eval", BASIC, "--agent", "cli.bad", "--junit", str(junit))
    assert result.code == 1, result.stdout + result.stderr
    assert "thresholds FAILED" in result.stdout
    assert "Exit             1 (the suite's thresholds failed)" in result.stdout
    cases = outcomes(junit)
    assert list(cases) == ["alpha", "beta", "gamma"]
    assert cases["alpha"] == ("passed", "")
    assert cases["beta"] == (
        "failure", 'exact: the decision "wrong" differs from the expected value "b"'
    )  # fmt: skip
    assert suite_counts(junit) == {"tests": "3", "failures": "1", "errors": "0", "skipped": "0"}


def test_regression_exits_2_and_beats_the_threshold_failure(
    served: ServedHost, basic_baseline: str, tmp_path: Path
) -> None:
    junit, report = tmp_path / "regression.xml", tmp_path / "regression.json"
    result = served.cli(
        "eval", BASIC, "--agent", "cli.bad", "--baseline", basic_baseline,
        "--junit", str(junit), "--json", str(report),
    )  # fmt: skip
    # The candidate also misses the suite's bar (1 < 2): the regression is what is reported.
    assert result.code == 2, result.stdout + result.stderr
    assert "REGRESSED" in result.stdout
    assert "(1 regressed · 2 unchanged)" in result.stdout
    summary = result.json_file(report)["summary"]
    assert summary["regression"]["baselineRunId"] == basic_baseline
    assert summary["regression"]["verdict"] == "regressed"
    cases = outcomes(junit)
    assert list(cases) == ["alpha", "beta", "gamma"]
    assert cases["beta"] == (
        "failure",
        'regressed: exact: the decision "wrong" differs from the expected value "b" '
        "(score 1.00 -> 0.00, delta -1.00)",
    )
    assert cases["alpha"] == cases["gamma"] == ("passed", "")

    candidate = str(result.json_file(report)["runId"])
    compared = served.cli("compare", basic_baseline, candidate)
    assert compared.code == 2, compared.stdout + compared.stderr
    assert "regressed" in compared.stdout
    # Under the table: the regressed task's reason, as the host gave it.
    assert BETA_REGRESSED in compared.stdout.splitlines()
    assert BETA_REGRESSED in result.stdout.splitlines()
    # The same pair the other way round is an improvement, and the candidate then passes.
    reverse = served.cli("compare", candidate, basic_baseline)
    assert reverse.code == 0, reverse.stdout + reverse.stderr
    assert "IMPROVED" in reverse.stdout


def test_compare_refuses_runs_of_different_suites(
    served: ServedHost, basic_baseline: str, tmp_path: Path
) -> None:
    out = tmp_path / "coin.json"
    coin = served.cli("eval", COIN, "--agent", "cli.good", "--json", str(out))
    assert coin.code == 0, coin.stderr
    result = served.cli("compare", basic_baseline, str(coin.json_file(out)["runId"]))
    assert result.code == 4
    assert "different suites" in result.stderr


def test_inconclusive_multi_trial_exits_3_only_with_strict(
    served: ServedHost, tmp_path: Path
) -> None:
    base_json = tmp_path / "base.json"
    base = served.cli(
        "eval", COIN, "--agent", "cli.good", "--trials", "4", "--json", str(base_json)
    )
    assert base.code == 0, base.stdout + base.stderr
    # --trials publishes a derived version of the suite: X.Y.(1000000 + 1000·Z + N).
    assert base.json_file(base_json)["summary"]["suiteVersion"] == "1.0.1000004"
    baseline = str(base.json_file(base_json)["runId"])

    junit = tmp_path / "inconclusive.xml"
    strict = served.cli(
        "eval", COIN, "--agent", "cli.flaky", "--trials", "4", "--baseline", baseline,
        "--strict", "--junit", str(junit),
    )  # fmt: skip
    # 4/4 against 2/4 passes: Fisher p ≈ 0.43, so a real drop that the trials cannot prove.
    assert strict.code == 3, strict.stdout + strict.stderr
    assert "INCONCLUSIVE" in strict.stdout
    assert "2/4" in strict.stdout
    assert outcomes(junit)["coin"][0] == "skipped"
    assert outcomes(junit)["coin"][1].startswith("inconclusive: score 1.00 -> 0.50, delta -0.50")
    assert suite_counts(junit)["skipped"] == "1"

    lenient_json = tmp_path / "lenient.json"
    lenient = served.cli(
        "eval", COIN, "--agent", "cli.flaky", "--trials", "4", "--baseline", baseline,
        "--json", str(lenient_json),
    )  # fmt: skip
    assert lenient.code == 0, lenient.stdout + lenient.stderr
    assert "INCONCLUSIVE" in lenient.stdout
    # Several trials a side: the table has the p-value and flaky columns, the reason its marks.
    assert "┃     p ┃ Flaky ┃" in lenient.stdout
    assert "│ inconclusive │ 0.429 │ flaky │" in lenient.stdout
    assert COIN_FLAKY in lenient.stdout.splitlines()
    compared = served.cli("compare", baseline, str(lenient.json_file(lenient_json)["runId"]))
    assert compared.code == 0, compared.stdout + compared.stderr
    assert "│ inconclusive │ 0.429 │ flaky │" in compared.stdout
    assert COIN_FLAKY in compared.stdout.splitlines()


def test_unreachable_host_exits_4() -> None:
    port = free_port()  # nothing listens there once the probe is closed
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0
    result = run_cli(
        "eval", BASIC, "--agent", "cli.good",
        "--url", f"http://127.0.0.1:{port}", "--api-key", "whatever",
    )  # fmt: skip
    assert result.code == 4
    assert "cannot reach the host" in result.stderr


def test_host_error_exits_4(served: ServedHost) -> None:
    result = served.cli("eval", "cli.test.evals.absent@1.0.0", "--agent", "cli.good")
    assert result.code == 4
    assert "validation_error" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        # One per place a usage error can arise: click's parser, a command body, a group.
        pytest.param(["eval", BASIC], id="missing-agent"),
        pytest.param(["eval", BASIC, "--agent", "a", "--from-run", "no-equals"], id="bad-from-run"),
        pytest.param(["runs", "nosuch"], id="runs-unknown-command"),
    ],
)
def test_usage_errors_exit_4(args: list[str]) -> None:
    result = run_cli(*args)
    assert result.code == 4, result.stdout + result.stderr
    assert "Usage: wopeval" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["eval", BASIC, "--agent", "a", "--modes", "golden,bogus"], id="bad-mode"),
        pytest.param(["eval", BASIC, "--agent", "a", "--trials", "0"], id="trials-range"),
        pytest.param(["compare", "only-one"], id="compare-one-run"),
        pytest.param(["report", "dev/0123456789abcdef0123"], id="report-no-output"),
        pytest.param(["suites"], id="suites-no-command"),
        pytest.param(["eval", BASIC, "--agent", "a", "--url", "http://x"], id="url-without-key"),
        pytest.param(
            ["eval", BASIC, "--agent", "a", "--tools-changed", "sometimes"], id="bad-tools-changed"
        ),
    ],
)
def test_more_usage_errors_exit_4_in_process(args: list[str]) -> None:
    """The same app object in-process (CliRunner): cheaper than a subprocess per case."""
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 4, result.output


def test_tools_changed_fail_is_refused_for_a_host_at_a_url() -> None:
    """It configures the embedded host; a host at --url is told how to configure itself."""
    args = ["eval", BASIC, "--agent", "a", "--url", "http://127.0.0.1:9", "--api-key", "k"]
    result = CliRunner().invoke(app, [*args, "--tools-changed", "fail"])
    assert result.exit_code == 4, result.output
    assert "WOPEVAL_EVAL_TOOLS_CHANGED=fail" in " ".join(result.output.split())


def test_help_documents_the_exit_codes() -> None:
    result = run_cli("eval", "--help")
    assert result.code == 0
    text = " ".join(result.stdout.split())
    assert "2 regression against the baseline" in text
    assert "Precedence: 4 > 2 > 1 > 3 > 0" in text
