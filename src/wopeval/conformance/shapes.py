"""Small JSON-Schema-like checks for the wire shapes RFC 0251 and RFC 0252 add.

Each check takes a decoded JSON value and returns the problems it finds
(empty = valid), mirroring the schema text the RFCs give:

- `fixtureRuns` (RFC 0252 "Wire shape"): `type: object, minProperties: 1,
  propertyNames {type: string, minLength: 1}, additionalProperties: runId`;
- `evalModes` (RFC 0251 §B): a non-empty array of distinct RFC 0081 §D modes;
- `baselineRunId` (RFC 0251 §B): a runId;
- the facet members `recordedFixtures` / `baselineSelection` (§A of each): booleans;
- `eval.started` (run-event-payloads `evalStarted`, closed with the vendor hatch)
  with its optional `baselineRunId` and `fixtureRuns` (RFC 0252 §E).

They are used twice: server-free against the vectors in `shape_vectors.json`
(the `*.shape` legs) and on what a live host actually sends.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from importlib import resources
from typing import Any

from wopeval.conformance.results import LegFailed

RUN_ID = re.compile(r"^(anon:)?[A-Za-z0-9._~-]{1,128}/[A-Za-z0-9._~-]{16,128}$")
"""ids.schema.json `runId`: `<tenantId>/<opaque>`."""
EVAL_MODES = ("golden", "rubric", "adversarial", "regression", "live-shadow")
"""RFC 0081 §D."""
_HATCH = re.compile(r"^(openwop-|x-|vendor\.)")
"""The vendor hatch every `eval.*` payload carries (RFC 0185)."""
_EVAL_STARTED_KEYS = frozenset(
    {"suiteId", "suiteVersion", "taskCount", "modes", "baselineRunId", "fixtureRuns"}
)

Check = Callable[[Any], list[str]]


def run_id_problems(value: Any) -> list[str]:
    if not isinstance(value, str):
        return [f"runId must be a string, got {type(value).__name__}"]
    if not RUN_ID.fullmatch(value):
        return [f"runId {value!r} does not match {RUN_ID.pattern}"]
    return []


def fixture_runs_problems(value: Any) -> list[str]:
    if not isinstance(value, dict):
        return [f"fixtureRuns must be an object, got {type(value).__name__}"]
    if not value:
        return ["fixtureRuns must have at least one property (minProperties 1)"]
    problems: list[str] = []
    for key, run_id in value.items():
        if not isinstance(key, str) or not key:
            problems.append("fixtureRuns property names must be non-empty strings")
        problems.extend(f"fixtureRuns[{key!r}]: {p}" for p in run_id_problems(run_id))
    return problems


def eval_modes_problems(value: Any) -> list[str]:
    if not isinstance(value, list):
        return [f"evalModes must be an array, got {type(value).__name__}"]
    if not value:
        return ["evalModes must not be empty"]
    problems = [f"evalModes: {m!r} is not an RFC 0081 mode" for m in value if m not in EVAL_MODES]
    if not problems and len(set(value)) != len(value):
        problems.append("evalModes must be distinct")
    return problems


def boolean_member_problems(value: Any) -> list[str]:
    if not isinstance(value, bool):
        return [f"facet member must be a boolean, got {type(value).__name__} {value!r}"]
    return []


def eval_started_problems(value: Any) -> list[str]:
    if not isinstance(value, dict):
        return [f"eval.started payload must be an object, got {type(value).__name__}"]
    problems: list[str] = []
    for key in ("suiteId", "suiteVersion"):
        if not isinstance(value.get(key), str) or not value[key]:
            problems.append(f"eval.started.{key} must be a non-empty string")
    count = value.get("taskCount")
    # JSON booleans decode to Python bools, which are ints; the schema says "integer".
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        problems.append("eval.started.taskCount must be an integer >= 0")
    modes = value.get("modes")
    if not isinstance(modes, list) or any(m not in EVAL_MODES for m in modes):
        problems.append("eval.started.modes must be an array of RFC 0081 modes")
    elif len(set(modes)) != len(modes):
        problems.append("eval.started.modes must be unique")
    if "baselineRunId" in value:
        problems.extend(f"eval.started.{p}" for p in run_id_problems(value["baselineRunId"]))
    if "fixtureRuns" in value:
        problems.extend(f"eval.started.{p}" for p in fixture_runs_problems(value["fixtureRuns"]))
    extra = sorted(k for k in value if k not in _EVAL_STARTED_KEYS and not _HATCH.match(k))
    if extra:
        problems.append(f"eval.started is closed; unknown properties {extra}")
    return problems


CHECKS: dict[str, Check] = {
    "fixtureRuns": fixture_runs_problems,
    "recordedFixtures": boolean_member_problems,
    "eval.started": eval_started_problems,
    "evalModes": eval_modes_problems,
    "baselineRunId": run_id_problems,
    "baselineSelection": boolean_member_problems,
}
"""The check each vector group in `shape_vectors.json` runs through."""


def check_vectors(rfc: str) -> str:
    """Run every vector of `rfc` in `shape_vectors.json`; fail with each disagreement."""
    groups: dict[str, list[dict[str, Any]]] = _vectors()[rfc]
    disagreements: list[str] = []
    counts = {True: 0, False: 0}
    for group, vectors in groups.items():
        check = CHECKS[group]
        for vector in vectors:
            valid = bool(vector["valid"])
            counts[valid] += 1
            problems = check(vector["value"])
            if valid and problems:
                disagreements.append(f"{group} ({vector['why']}) refused: {problems[0]}")
            elif not valid and not problems:
                disagreements.append(f"{group} ({vector['why']}) validated")
    if disagreements:
        raise LegFailed("; ".join(disagreements))
    return (
        f"{counts[True]} valid vectors validate and {counts[False]} invalid ones are refused "
        f"({', '.join(groups)})"
    )


def _vectors() -> dict[str, Any]:
    text = resources.files("wopeval.conformance").joinpath("shape_vectors.json").read_text()
    loaded: dict[str, Any] = json.loads(text)
    return loaded
