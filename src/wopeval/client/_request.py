"""What an eval run asks for: the createRun body, its modes and fixture runs, `--trials`.

The wire has no trials property, so `--trials N` publishes a variant of the
suite (see `trials_version`) and runs that.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from wopeval.client._wire import ClientError, HostError, WireClient
from wopeval.wire import errors
from wopeval.wire.suite import SEMVER_PATTERN, Suite, parse_suite

EVAL_MODES = ("golden", "rubric", "adversarial", "regression", "live-shadow")
"""RFC 0081 §D modes a client may name in `evalModes`."""

DERIVED_PATCH_BASE = 1_000_000
"""`--trials` publishes `X.Y.(1000000 + 1000·Z + N)`: see `trials_version`."""


@dataclass(frozen=True)
class EvalRequest:
    """What `wopeval eval` asks the host for: an RFC 0081 eval createRun body."""

    suite_ref: str
    agent_id: str
    modes: tuple[str, ...] | None = None
    baseline_run_id: str | None = None
    fixture_runs: Mapping[str, str] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    revision: str | None = None
    """The agent's code under evaluation (git commit or label), kept in the run's metadata."""
    judge_source_run_id: str | None = None
    """The run whose recorded judgements a rubric eval replays (default: the baseline)."""

    def body(self) -> dict[str, Any]:
        """The closed createRun body; RFC 0251/0252 members only when used (never sent empty)."""
        body: dict[str, Any] = {
            "mode": "eval",
            "evalSuiteRef": self.suite_ref,
            "agentId": self.agent_id,
        }
        if self.modes:
            body["evalModes"] = list(self.modes)
        if self.baseline_run_id:
            body["baselineRunId"] = self.baseline_run_id
        if self.fixture_runs:
            body["fixtureRuns"] = dict(self.fixture_runs)
        if self.tags:
            body["tags"] = list(self.tags)
        if self.revision:
            body["metadata"] = {REVISION_KEY: self.revision}
        if self.judge_source_run_id:
            # This host's extension (docs/graders.md, "Its replay"), under its org's name.
            extension = {"judgeSourceRunId": self.judge_source_run_id}
            body["configurable"] = {"version": 1, "extensions": {"wopeval": extension}}
        return body


REVISION_KEY = "wopeval.revision"
"""The run `metadata` key (runs.md: free-form, persisted, never read by the engine) that
holds the revision of the code an eval run judged."""


def default_modes(baseline_run_id: str | None) -> tuple[str, ...] | None:
    """The modes to send when none are named: regression with a baseline, else none at all.

    RFC 0251 §B: a baseline needs `regression` in `evalModes`; without one,
    `evalModes` stays absent ("the host's default") and the request carries no
    RFC 0251 property, so it suits a host without `baselineSelection` too.
    """
    return ("golden", "regression") if baseline_run_id else None


def parse_modes(text: str) -> tuple[str, ...]:
    """`golden,regression` → a tuple of distinct known modes; ValueError otherwise."""
    modes = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [m for m in modes if m not in EVAL_MODES]
    if not modes or unknown:
        raise ValueError(f"modes must be a comma list of {', '.join(EVAL_MODES)}")
    if len(set(modes)) != len(modes):
        raise ValueError("modes must be distinct")
    return modes


def parse_fixture_runs(pairs: list[str]) -> dict[str, str]:
    """`TASK=RUN_ID` pairs (RFC 0252 §B `fixtureRuns`); ValueError if malformed or repeated."""
    runs: dict[str, str] = {}
    for pair in pairs:
        task, sep, run_id = pair.partition("=")
        if not sep or not task or not run_id:
            raise ValueError(f"--from-run must be TASK=RUN_ID, got {pair!r}")
        if task in runs:
            raise ValueError(f"--from-run names task {task!r} twice")
        runs[task] = run_id
    return runs


def trials_version(version: str, trials: int) -> str:
    """The version a `--trials N` variant of `version` is published under.

    The wire has no trials property, so the variant is a suite document of its
    own. It keeps the `suiteId` (a baseline matches on it, RFC 0251 §C) and
    needs a plain SemVer (no build metadata), so the patch number carries the
    origin: `X.Y.Z` with N trials becomes `X.Y.(1000000 + 1000·Z + N)`. It is
    deterministic (the same override republishes the identical document, 200),
    far above any hand-written patch, and reversible by eye.
    """
    if not re.fullmatch(SEMVER_PATTERN, version):
        raise ClientError(f"suite version {version!r} is not X.Y.Z")
    major, minor, patch = (int(part) for part in version.split("."))
    return f"{major}.{minor}.{DERIVED_PATCH_BASE + 1000 * patch + trials}"


def with_trials(document: dict[str, Any], trials: int) -> dict[str, Any]:
    """The document with every task run `trials` times (suite level and task overrides)."""
    derived = dict(document)
    derived["version"] = trials_version(str(document["version"]), trials)
    derived["trials"] = trials
    derived["tasks"] = [
        {**task, "trials": trials} if "trials" in task else task for task in document["tasks"]
    ]
    return derived


def publish_trials_variant(client: WireClient, suite_ref: str, trials: int) -> str:
    """Fetch the suite, publish its `trials` variant, and return the ref that names it."""
    return _publish_variant(client, suite_ref, "--trials", lambda doc: with_trials(doc, trials))


def _publish_variant(
    client: WireClient,
    suite_ref: str,
    option: str,
    derive: Callable[[dict[str, Any]], dict[str, Any]],
) -> str:
    """Fetch the suite, publish the variant `derive` makes of it, return the ref naming it."""
    document = client.get_suite(suite_ref)
    if document is None:
        raise ClientError(
            f"{option} needs the host's suite routes (GET/PUT /host/wopeval/suites) and a "
            f"suite it holds; {suite_ref!r} could not be fetched"
        )
    derived = derive(document)
    try:
        parse_suite(derived)
    except errors.ValidationFailed as exc:
        raise ClientError(f"the {option} variant is not a valid suite: {exc}") from None
    client.put_suite(derived)
    return f"{derived['suiteId']}@{derived['version']}"


EXTRA_PATCH_BASE = 2_000_000_000
"""`--trials auto` publishes its extra trials as `X.Y.(2000000000 + a digest)`: see
`extra_trials_version`."""


def extra_trials_version(version: str, allocation: Mapping[str, int]) -> str:
    """The version the `--trials auto` variant running `allocation` is published under.

    Which tasks and how many trials vary run to run, so no readable code fits in
    a patch number as `trials_version`'s does: the patch is 2000000000 plus nine
    decimal digits of the SHA-256 of the base version and the allocation. It is
    deterministic (the same extra trials republish the identical document) and above
    both hand-written and `--trials` patches; a collision would be refused by the host
    as a different document under a published version, never run.
    """
    if not re.fullmatch(SEMVER_PATTERN, version):
        raise ClientError(f"suite version {version!r} is not X.Y.Z")
    major, minor, _ = version.split(".")
    digest = hashlib.sha256(json.dumps([version, sorted(allocation.items())]).encode()).hexdigest()
    return f"{major}.{minor}.{EXTRA_PATCH_BASE + int(digest, 16) % 1_000_000_000}"


def with_extra_trials(document: dict[str, Any], allocation: Mapping[str, int]) -> dict[str, Any]:
    """The document with only the tasks of `allocation`, each run as many times as it says."""
    derived = dict(document)
    derived["version"] = extra_trials_version(str(document["version"]), allocation)
    derived["tasks"] = [
        {**task, "trials": allocation[task["taskId"]]}
        for task in document["tasks"]
        if task["taskId"] in allocation
    ]
    return derived


def publish_extra_trials_variant(
    client: WireClient, suite_ref: str, allocation: Mapping[str, int]
) -> str:
    """Publish the suite's `--trials auto` variant for `allocation`; the ref that names it."""
    return _publish_variant(
        client, suite_ref, "--trials auto", lambda doc: with_extra_trials(doc, allocation)
    )


def readable_suite(client: WireClient, suite_ref: str) -> Suite | None:
    """The suite `suite_ref` names, when the host shows it (its suite routes) and it parses."""
    try:
        document = client.get_suite(suite_ref)
    except HostError:
        return None
    if document is None:
        return None
    try:
        return parse_suite(document)
    except errors.ValidationFailed:
        return None


def planned_trials(client: WireClient, suite_ref: str) -> int | None:
    """Tasks × trials of the suite, when the host will show it (for the progress bar)."""
    suite = readable_suite(client, suite_ref)
    if suite is None:
        return None  # only the bar's total depends on it: never fail an eval over it
    from wopeval import evals

    return sum(evals.effective_trials(suite, task) for task in suite.tasks)


def suite_id_of(suite_ref: str) -> str:
    """The suiteId a `suite://<suiteId>@<version>` or `<suiteId>@<version>` ref names (a
    fixture id names itself)."""
    return suite_ref.removeprefix("suite://").partition("@")[0]
