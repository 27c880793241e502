"""`/openapi.json` documents the refusals each route sends, in the one envelope schema."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from ._server import ServerHandle

ENVELOPE_REF = "#/components/schemas/ErrorEnvelope"


@pytest.fixture(scope="module")
def document(server: ServerHandle) -> dict[str, Any]:
    # No credential: the description is public, like discovery.
    with server.http(None) as anonymous:
        response = anonymous.get("/openapi.json")
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


def _operations(document: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    return {
        operation["operationId"]: (path, operation)
        for path, operations in document["paths"].items()
        for operation in operations.values()
    }


def test_every_error_response_is_the_envelope(document: dict[str, Any]) -> None:
    envelope = document["components"]["schemas"]["ErrorEnvelope"]
    assert envelope["required"] == ["error", "message"]
    assert envelope["additionalProperties"] is False
    assert "HTTPValidationError" not in document["components"]["schemas"]
    for operation_id, (_, operation) in _operations(document).items():
        errors = {s: r for s, r in operation["responses"].items() if int(s) >= 400}
        assert {"400", "406"} <= set(errors), operation_id
        for status, response in errors.items():
            schema = response["content"]["application/json"]["schema"]
            assert schema == {"$ref": ENVELOPE_REF}, (operation_id, status)


UNAUTHENTICATED = ("getCapabilities", "wopevalHealth")
"""Discovery and the process probe answer without a key (the probe shows no tenant's data)."""


def test_each_route_documents_what_it_can_refuse(document: dict[str, Any]) -> None:
    operations = _operations(document)
    for operation_id, (path, operation) in operations.items():
        statuses = set(operation["responses"])
        if operation_id not in UNAUTHENTICATED:
            assert "401" in statuses, operation_id
            assert operation["security"] == [{"HTTPBearer": []}], operation_id
        if "{runId}" in path:
            assert {"403", "404"} <= statuses, operation_id
    for operation_id in UNAUTHENTICATED:
        assert "401" not in operations[operation_id][1]["responses"], operation_id
    assert {"409", "413", "422"} <= set(operations["createRun"][1]["responses"])
    assert {"409", "410", "413", "422"} <= set(operations["forkRun"][1]["responses"])
    assert "409" in operations["cancelRun"][1]["responses"]
    assert "409" in operations["wopevalPutSuite"][1]["responses"]
    assert "422" not in operations["getRun"][1]["responses"]
    assert "405" in document["info"]["description"]


def test_the_documented_bounds_are_the_enforced_ones(
    document: dict[str, Any], http_a: httpx.Client
) -> None:
    operations = _operations(document)
    limit = next(p for p in operations["listRuns"][1]["parameters"] if p["name"] == "limit")
    maximum = limit["schema"]["maximum"]
    assert http_a.get("/.well-known/openwop").json()["runList"]["maxPageSize"] == maximum
    assert http_a.get("/runs", params={"limit": maximum}).status_code == 200
    assert http_a.get("/runs", params={"limit": maximum + 1}).status_code == 400
