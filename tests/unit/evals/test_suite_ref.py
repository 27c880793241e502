"""`evals/_suite_ref.py`: the three forms of `evalSuiteRef`."""

from __future__ import annotations

import pytest

from wopeval import evals
from wopeval.wire import errors


@pytest.mark.parametrize(
    "ref",
    [
        "conformance-eval-recorded-source",
        "conformance-eval-regression-base",
        "conformance-noop",
        "acme.refund-flow_v2",
    ],
)
def test_fixture_ids(ref: str) -> None:
    assert evals.parse_suite_ref(ref) == evals.FixtureSuiteRef(fixture_id=ref)


@pytest.mark.parametrize(
    "ref",
    [
        "suite://conformance.openwop.evals.regression@1.1.0",
        "conformance.openwop.evals.regression@1.1.0",
    ],
)
def test_versioned_forms(ref: str) -> None:
    assert evals.parse_suite_ref(ref) == evals.VersionedSuiteRef(
        suite_id="conformance.openwop.evals.regression", version="1.1.0"
    )


@pytest.mark.parametrize(
    "ref",
    [
        "",
        "suite://",
        "suite://acme.evals.x",
        "suite://acme.evals.x@",
        "suite://acme.evals.x@1.0",
        "acme.evals.x@1.0.0@2",
        "acme.x@1.0.0",
        "acme.evals.x@v1.0.0",
        "Conformance-Noop",
        "-leading-dash",
        "https://conformance.openwop.dev/eval-suites/unadvertised-probe",
        "acme/0123",
        "a" * 129,
    ],
)
def test_malformed_refs_are_refused_without_echo(ref: str) -> None:
    with pytest.raises(errors.ValidationFailed) as caught:
        evals.parse_suite_ref(ref)
    assert caught.value.message.startswith("evalSuiteRef must be")
    if len(ref) > len("suite://"):
        assert ref not in caught.value.message


def test_refs_are_frozen() -> None:
    ref = evals.parse_suite_ref("conformance-noop")
    assert isinstance(ref, evals.FixtureSuiteRef)
    with pytest.raises(AttributeError):
        ref.fixture_id = "other"  # type: ignore[misc]
