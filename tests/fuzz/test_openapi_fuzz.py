"""Schemathesis against the live host's own `/openapi.json` (issue 10, item 5; issue 25, item 7).

Every check Schemathesis has runs, set up by the repository's `schemathesis.toml`
(the one `st run --checks all` reads from the repository root). Two kinds of run,
each on every database:

- per documented operation, schema-valid (positive) and schema-violating (negative)
  requests, a bounded number of each. Path ids are drawn from random strings and
  from runs that exist, and half the create bodies name a workflow the host has, so
  the requests reach past the first refusal into the engine and the store. Any 5xx,
  an answer the document does not describe, a valid request refused or an invalid
  one accepted fails. Generation is derandomized, so a failure reproduces;
- the `st` command's coverage phase, a real process: the boundary values of every
  parameter, each required header left out, and every method a path does not
  declare, whose 405 must name in `Allow` exactly the methods the document gives.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.schemas import OpenApiSchema

from e2e._server import TENANT_A, ServerHandle
from e2e._support import NOOP_WORKFLOW
from wopeval.hosting.app import host_app
from wopeval.settings import Settings
from wopeval.wire import ids

# With the coverage phase below, the tier takes about as long as 40 did with five checks.
EXAMPLES_PER_OPERATION = 30
CONFIG_FILE = Path(__file__).parents[2] / "schemathesis.toml"
ST = str(Path(sys.executable).with_name("st"))
POSITIVE, NEGATIVE = schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE
Operation = schemathesis.APIOperation[Any, Any, Any, Any]
Case = schemathesis.Case[Any]


def _collected() -> list[tuple[str, schemathesis.GenerationMode]]:
    """Every operation with valid input, and those whose input can break the schema with
    invalid input too.

    Collected from the app itself; each test then reads its operation from the live host.
    """
    document = host_app(Settings(api_keys={"collect": "only"})).openapi()
    collected = []
    for operations in document["paths"].values():
        for operation in operations.values():
            collected.append((operation["operationId"], POSITIVE))
            if _can_be_invalid(operation):
                collected.append((operation["operationId"], NEGATIVE))
    return sorted(collected, key=lambda pair: (pair[0], pair[1].value))


def _can_be_invalid(operation: dict[str, Any]) -> bool:
    """A body, or a parameter that is more than any text (an undeclared query parameter is
    ignored and the credential is never drawn: `schemathesis.toml`)."""
    return "requestBody" in operation or any(
        set(parameter["schema"]) - {"type", "title"} or parameter["schema"].get("type") != "string"
        for parameter in operation.get("parameters", ())
    )


@pytest.fixture(scope="module")
def live_schema(fuzzed_host: ServerHandle) -> OpenApiSchema:
    return schemathesis.openapi.from_url(
        f"{fuzzed_host.base_url}/openapi.json", config=SchemathesisConfig.from_path(CONFIG_FILE)
    )


@pytest.fixture
def session() -> Iterator[requests.Session]:
    with requests.Session() as opened:
        opened.trust_env = False
        yield opened


def _cases(
    operation: Operation,
    mode: schemathesis.GenerationMode,
    run_ids: list[str],
) -> st.SearchStrategy[Case]:
    drawn = operation.as_strategy(generation_mode=mode)
    if "{runId}" in operation.path:
        # `diffRun` names a second run in `against`: pinned to the same run, its 200 is reached.
        diff = operation.label == "GET /runs/{runId}:diff"
        pinned = [
            operation.as_strategy(
                generation_mode=mode,
                path_parameters={"runId": ids.project(r)},
                query={"against": ids.project(r)} if diff else None,
            )
            for r in run_ids
        ]
        return st.one_of(drawn, *pinned)
    if operation.label == "POST /runs":
        return st.one_of(drawn, drawn.map(_with_known_workflow))
    return drawn


def _with_known_workflow(case: Case) -> Case:
    if isinstance(case.body, dict):
        case.body["workflowId"] = NOOP_WORKFLOW
    return case


def _fuzz(cases: st.SearchStrategy[Case], send: Callable[[Case], None]) -> None:
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=cases)
    def each(case: Case) -> None:
        send(case)

    each()


# Schemathesis draws some body values from the `random` module, which Hypothesis warns of.
@pytest.mark.filterwarnings(
    "ignore:Do not use the `random` module inside strategies"
    ":hypothesis.errors.HypothesisDeprecationWarning"
)
@pytest.mark.parametrize(
    ("operation_id", "mode"), _collected(), ids=lambda value: getattr(value, "value", value)
)
def test_no_request_gets_a_5xx_or_an_undocumented_answer(
    fuzzed_host: ServerHandle,
    finished_run_ids: list[str],
    live_schema: OpenApiSchema,
    session: requests.Session,
    operation_id: str,
    mode: schemathesis.GenerationMode,
) -> None:
    operation = live_schema.find_operation_by_id(operation_id)
    headers = {"Authorization": f"Bearer {fuzzed_host.keys[TENANT_A]}", "OpenWOP-Version": "2"}

    def send(case: Case) -> None:
        response = case.call(
            base_url=fuzzed_host.base_url, session=session, headers=headers, timeout=60
        )
        # No `checks`: every check, as `schemathesis.toml` sets them up.
        case.validate_response(response, headers=headers)

    _fuzz(_cases(operation, mode, finished_run_ids), send)


def test_the_coverage_phase_finds_nothing(fuzzed_host: ServerHandle, tmp_path: Path) -> None:
    """`st run --checks all --phases coverage`, as a user of the repository would run it
    (from a scratch directory, where its cache goes)."""
    done = subprocess.run(
        [
            ST,
            "--config-file",
            str(CONFIG_FILE),
            "--no-color",
            "run",
            f"{fuzzed_host.base_url}/openapi.json",
            "--checks",
            "all",
            "--phases",
            "coverage",
            "--workers",
            "1",
            "--seed",
            "25",
            "--header",
            f"Authorization: Bearer {fuzzed_host.keys[TENANT_A]}",
            "--header",
            "OpenWOP-Version: 2",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
