"""`evals/_suite_ref.py`: the three forms of `evalSuiteRef`."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

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


_REF_TEXT = st.text(alphabet="abcz019.-_@:/sueit", max_size=40)


@given(ref=st.one_of(st.from_regex(evals.SUITE_REF_PATTERN, fullmatch=True), _REF_TEXT))
def test_the_documented_pattern_is_exactly_what_parses(ref: str) -> None:
    """`/openapi.json` gives `{ref}` this pattern: a ref it admits is never refused for its
    shape, and one it does not admit is."""
    try:
        evals.parse_suite_ref(ref)
    except errors.ValidationFailed:
        parses = False
    else:
        parses = True
    assert parses == bool(re.fullmatch(evals.SUITE_REF_PATTERN, ref))
