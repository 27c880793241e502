"""What an `evalSuiteRef` names (runs.md §Create; wire digest §2.2 and gap G9).

`evalSuiteRef` is a string; the spec leaves its form open. This host accepts
three forms, decided here and nowhere else:

- a fixture id, e.g. `conformance-eval-recorded-source` (how openwop-app and the
  conformance scenarios name suites, RFC 0251 implementation notes);
- `suite://<suiteId>@<version>`;
- `<suiteId>@<version>`.

Whether the named suite exists is the store's question, not this module's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wopeval.wire import errors
from wopeval.wire.suite import SEMVER_PATTERN, SUITE_ID_PATTERN

_SCHEME = "suite://"
_FIXTURE_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,127}$")
_SUITE_ID = re.compile(SUITE_ID_PATTERN)
_SEMVER = re.compile(SEMVER_PATTERN)
_REFUSAL = "evalSuiteRef must be a fixture id, suite://<suiteId>@<version> or <suiteId>@<version>"

SUITE_REF_PATTERN = (
    rf"^(?:(?:{_SCHEME})?{SUITE_ID_PATTERN.strip('^$')}@{SEMVER_PATTERN.strip('^$')}"
    rf"|{_FIXTURE_ID.pattern.strip('^$')})$"
)
"""Every ref `parse_suite_ref` accepts, as one pattern (for `/openapi.json`)."""


@dataclass(frozen=True, slots=True)
class FixtureSuiteRef:
    """A suite named by the fixture id it was seeded or stored under."""

    fixture_id: str


@dataclass(frozen=True, slots=True)
class VersionedSuiteRef:
    """A suite named by its `suiteId` and exact `version`."""

    suite_id: str
    version: str


SuiteRef = FixtureSuiteRef | VersionedSuiteRef


def parse_suite_ref(ref: str) -> SuiteRef:
    """Classify `ref`, or raise `errors.ValidationFailed` (which does not echo it)."""
    versioned = ref.removeprefix(_SCHEME)
    if versioned != ref or "@" in ref:
        suite_id, at, version = versioned.partition("@")
        # Both halves must be well formed: `<suiteId>@<version>`.
        if at and _SUITE_ID.fullmatch(suite_id) and _SEMVER.fullmatch(version):
            return VersionedSuiteRef(suite_id=suite_id, version=version)
        raise errors.ValidationFailed(_REFUSAL)
    if _FIXTURE_ID.fullmatch(ref):
        return FixtureSuiteRef(fixture_id=ref)
    raise errors.ValidationFailed(_REFUSAL)
