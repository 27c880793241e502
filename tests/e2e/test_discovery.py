"""Discovery, version negotiation and the catalog (capabilities.md, versioning.md §1)."""

from __future__ import annotations

import httpx
import pytest
from fastapi.routing import APIRoute
from openwop_client import OpenwopClient, WopError

from wopeval.api.app import ROUTERS

from ._server import ServerHandle
from ._support import (
    COUNTER_WORKFLOW,
    PROTOCOL_VERSION,
    assert_error,
    assert_wop_error,
    store_unchanged,
)

SCRIPTED_AGENT = "conformance.scripted-agent"


def test_discovery_parses_with_the_official_client(server: ServerHandle) -> None:
    capabilities = server.client().discovery_capabilities()
    assert capabilities.protocolVersions == [PROTOCOL_VERSION]
    assert capabilities.preferredVersion == PROTOCOL_VERSION
    raw = capabilities.raw
    assert raw["protocolVersion"] == PROTOCOL_VERSION
    assert raw["eventLogSchemaVersion"] == 3
    assert {COUNTER_WORKFLOW, "conformance-noop"} <= set(raw["fixtures"])
    assert {"runList", "idempotency", "agents"} <= set(capabilities.families)
    eval_suite = capabilities.families["agents"].facets["evalSuite"]
    assert {"golden", "regression", "live-shadow"} <= set(eval_suite["modes"])


def test_discovery_needs_no_credential(http_anonymous: httpx.Client) -> None:
    response = http_anonymous.get("/.well-known/openwop")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    wrong = http_anonymous.get("/.well-known/openwop", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 200
    assert wrong.content == response.content


@pytest.mark.parametrize(
    "if_none_match",
    ["{etag}", "W/{etag}", '"something-else", {etag}'],
    ids=["strong", "weak", "list"],
)
def test_discovery_etag_revalidates_to_304(
    http_anonymous: httpx.Client, if_none_match: str
) -> None:
    first = http_anonymous.get("/.well-known/openwop")
    etag = first.headers["ETag"]
    assert etag.startswith('"')
    assert etag.endswith('"')
    again = http_anonymous.get(
        "/.well-known/openwop", headers={"If-None-Match": if_none_match.format(etag=etag)}
    )
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["ETag"] == etag
    assert again.headers["OpenWOP-Version"] == PROTOCOL_VERSION


def test_discovery_with_a_stale_etag_is_200(http_anonymous: httpx.Client) -> None:
    response = http_anonymous.get("/.well-known/openwop", headers={"If-None-Match": '"stale"'})
    assert response.status_code == 200
    assert response.json()["protocolVersions"] == [PROTOCOL_VERSION]


@pytest.mark.parametrize("version", ["2", "2.0", "2.46", "2.99"])
def test_any_minor_of_major_2_is_served(http_a: httpx.Client, version: str) -> None:
    response = http_a.get("/runs", params={"limit": 1}, headers={"OpenWOP-Version": version})
    assert response.status_code == 200
    assert response.headers["OpenWOP-Version"] == PROTOCOL_VERSION


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/.well-known/openwop"), ("GET", "/runs"), ("POST", "/runs"), ("GET", "/nowhere")],
)
def test_another_major_is_406_with_the_supported_versions(
    server: ServerHandle, http_a: httpx.Client, method: str, path: str
) -> None:
    with store_unchanged(server.database_url):
        response = http_a.request(
            method,
            path,
            headers={"OpenWOP-Version": "3"},
            json={"workflowId": "conformance-noop"} if method == "POST" else None,
        )
    body = assert_error(response, 406, "protocol_version_unsupported")
    assert body["details"]["protocolVersions"] == [PROTOCOL_VERSION]


def test_the_official_client_asking_for_major_3_is_refused(server: ServerHandle) -> None:
    client = OpenwopClient(server.base_url, server.key_a, major=3)
    with pytest.raises(WopError) as caught:
        client.discovery_capabilities()
    body = assert_wop_error(caught.value, 406, "protocol_version_unsupported")
    assert body["details"]["protocolVersions"] == [PROTOCOL_VERSION]


def test_the_version_header_is_on_every_kind_of_response(
    server: ServerHandle, http_a: httpx.Client, http_anonymous: httpx.Client
) -> None:
    etag = http_anonymous.get("/.well-known/openwop").headers["ETag"]
    responses = {
        "200 discovery": http_anonymous.get("/.well-known/openwop"),
        "304 discovery": http_anonymous.get(
            "/.well-known/openwop", headers={"If-None-Match": etag}
        ),
        "200 list": http_a.get("/runs"),
        "400 body": http_a.post("/runs", json={"nope": 1}),
        "401": http_anonymous.get("/runs"),
        "403": http_a.get("/runs/tenant-b~2F0123456789abcdef0123456789abcdef"),
        "404": http_a.get("/nowhere"),
        "405": http_a.delete("/runs"),
        "406": http_a.get("/runs", headers={"OpenWOP-Version": "1"}),
    }
    with http_a.stream("GET", "/runs/tenant-a~2F0123456789abcdef0123456789abcdef/events") as sse:
        responses["404 events"] = sse
    for name, response in responses.items():
        assert response.headers.get("OpenWOP-Version") == PROTOCOL_VERSION, name


def test_workflows_and_agents_read_through_the_client(server: ServerHandle) -> None:
    client = server.client()
    workflow = client.workflows_get(COUNTER_WORKFLOW)
    assert workflow["id"] == COUNTER_WORKFLOW
    assert [node["agentId"] for node in workflow["nodes"]] == [SCRIPTED_AGENT]
    agents = client.agents_list()
    assert agents is not None
    assert SCRIPTED_AGENT in {agent.agentId for agent in agents}
    agent = client.agents_get(SCRIPTED_AGENT)
    assert agent is not None
    assert agent.agentId == SCRIPTED_AGENT
    assert client.agents_get("no.such-agent") is None
    with pytest.raises(WopError) as caught:
        client.workflows_get("no-such-workflow")
    assert_wop_error(caught.value, 404, "not_found")


def test_openapi_needs_no_credential_and_describes_every_route(server: ServerHandle) -> None:
    anonymous = OpenwopClient(server.base_url, "not-a-key")
    document = anonymous.discovery_openapi()
    served = {
        # path_format: the template without converters ({runId:run} is {runId} on the wire)
        (route.path_format, method.lower())
        for router in ROUTERS
        for route in router.routes
        # The MCP endpoint and the model proxy speak MCP's and OpenAI's protocols, not
        # OpenWOP's: they are left out of the document on purpose.
        if isinstance(route, APIRoute) and route.include_in_schema
        for method in route.methods or ()
    }
    described = {
        (path, method) for path, operations in document["paths"].items() for method in operations
    }
    assert ("/runs", "post") in served
    assert served <= described, sorted(served - described)
    operation_ids = {
        operation["operationId"]
        for operations in document["paths"].values()
        for operation in operations.values()
    }
    assert {"createRun", "getRun", "listRuns", "forkRun", "getEvalSummary"} <= operation_ids
