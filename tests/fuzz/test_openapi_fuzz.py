"""Schemathesis against the live host's own `/openapi.json` (issue 10, item 5).

For every documented operation, schema-valid (positive) and schema-violating
(negative) requests are generated, a bounded number of each, sent to the real
host on each database, and every answer must be a non-5xx that the document
describes: a documented status, a documented content type and, for a refusal,
the error envelope. Path ids are drawn from random strings and from runs that
exist, and half the create bodies name a workflow the host has, so the
requests reach past the first refusal into the engine and the store.
Generation is derandomized, so a failure reproduces on the next run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.specs.openapi.schemas import OpenApiSchema

from e2e._server import TENANT_A, ServerHandle
from e2e._support import NOOP_WORKFLOW
from wopeval.api.app import create_app
from wopeval.settings import Settings
from wopeval.wire import ids

EXAMPLES_PER_OPERATION = 40
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
POSITIVE, NEGATIVE = schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE
Operation = schemathesis.APIOperation[Any, Any, Any, Any]
Case = schemathesis.Case[Any]


def _collected() -> list[tuple[str, schemathesis.GenerationMode]]:
    """Every operation with valid input, and those that take any with invalid input too.

    Collected from the app itself; each test then reads its operation from the live host.
    """
    document = create_app(Settings(api_keys={"collect": "only"})).openapi()
    collected = []
    for operations in document["paths"].values():
        for operation in operations.values():
            collected.append((operation["operationId"], POSITIVE))
            if operation.get("parameters") or operation.get("requestBody"):
                collected.append((operation["operationId"], NEGATIVE))
    return sorted(collected, key=lambda pair: (pair[0], pair[1].value))


@pytest.fixture(scope="module")
def live_schema(fuzzed_host: ServerHandle) -> OpenApiSchema:
    return schemathesis.openapi.from_url(f"{fuzzed_host.base_url}/openapi.json")


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
        case.validate_response(response, checks=CHECKS, headers=headers)

    _fuzz(_cases(operation, mode, finished_run_ids), send)
