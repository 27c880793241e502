"""`GET /.well-known/openwop`: the closed v2 discovery root (capabilities.md; docs/design.md §3)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from fastapi import APIRouter, Request, Response

from wopeval import __version__
from wopeval.api.deps import HostDep
from wopeval.api.middleware import PROTOCOL_VERSION
from wopeval.engine.catalog.catalog import Catalog
from wopeval.settings import Settings
from wopeval.wire import limits
from wopeval.wire.annotations import SIGNAL_KINDS, TARGETS
from wopeval.wire.events import EVENT_LOG_SCHEMA_VERSION
from wopeval.wire.json_text import JsonObject

router = APIRouter(tags=["discovery"])

_SINCE = PROTOCOL_VERSION


def _record(status: str = "stable", **facets: Any) -> JsonObject:
    record: JsonObject = {"status": status, "since": _SINCE, "witness": "witnessable-gated"}
    if status != "stable":
        record["until"] = "2027-12-31"
    record.update(facets)
    return record


def eval_suite_facet(settings: Settings) -> JsonObject:
    features = settings.eval
    facet: JsonObject = {
        "modes": list(features.modes),
        "maxTasksPerSuite": features.max_tasks_per_suite,
    }
    # RFC 0252 §A: recordedFixtures is only ever advertised beside fixtureMatching.
    flags = {
        "fixtureMatching": features.fixture_matching,
        "fixtureErrors": features.fixture_errors and features.fixture_matching,
        "regressionVerdict": features.regression_verdict,
        "baselineSelection": features.baseline_selection,
        "recordedFixtures": features.recorded_fixtures and features.fixture_matching,
    }
    facet.update({name: True for name, on in flags.items() if on})
    return facet


def build_discovery(settings: Settings, catalog: Catalog) -> JsonObject:
    document: JsonObject = {
        "protocolVersion": PROTOCOL_VERSION,
        "protocolVersions": [PROTOCOL_VERSION],
        "preferredVersion": PROTOCOL_VERSION,
        "implementation": {"name": "wopeval", "version": __version__},
        "eventLogSchemaVersion": EVENT_LOG_SCHEMA_VERSION,
        "fixtures": list(catalog.fixture_ids),
        "idempotency": _record(),
    }
    if settings.run_list:
        document["runList"] = _record(
            maxPageSize=limits.RUN_LIST_MAX_PAGE_SIZE, filters=["workflowId", "status", "tag"]
        )
    if settings.replay:
        document["replay"] = _record(
            "experimental", modes=["replay"], effectSeamsManifest="/host/effect-seams"
        )
    if settings.feedback:
        # RFC 0056 §A's facets: the granularities and the signal kinds this host accepts.
        document["feedback"] = _record(
            "experimental",
            targets=list(TARGETS),
            signals=list(SIGNAL_KINDS),
        )
    agents = _record("experimental")
    if settings.eval.enabled:
        agents["evalSuite"] = eval_suite_facet(settings)
    document["agents"] = agents
    return document


@router.get("/.well-known/openwop", operation_id="getCapabilities")
async def get_capabilities(request: Request, host: HostDep) -> Response:
    cached = getattr(request.app.state, "discovery", None)
    if cached is None:
        body = json.dumps(build_discovery(host.settings, host.catalog), separators=(",", ":"))
        etag = '"' + hashlib.sha256(body.encode()).hexdigest()[:32] + '"'
        cached = request.app.state.discovery = (body, etag)
    body, etag = cached
    headers = {"ETag": etag, "Cache-Control": "public, max-age=300"}
    if etag in _etags(request.headers.get("if-none-match")):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="application/json", headers=headers)


def _etags(header: str | None) -> set[str]:
    if not header:
        return set()
    return {part.strip().removeprefix("W/") for part in header.split(",")}
