"""Hosts that get exactly one thing wrong, each a `Behaviour` of the proxy.

Every class names the RFC sentence it breaks; the tests assert which legs
notice.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ._proxy import Behaviour, Forward


def _decode(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


def _encode(document: Any) -> bytes:
    return json.dumps(document, separators=(",", ":")).encode()


def _supplied_ids(forward: Forward) -> list[str]:
    """The run ids a createRun body names (baselineRunId, fixtureRuns values)."""
    body = forward.json()
    if forward.method != "POST" or forward.path != "/runs" or not isinstance(body, dict):
        return []
    ids = [body["baselineRunId"]] if isinstance(body.get("baselineRunId"), str) else []
    runs = body.get("fixtureRuns")
    if isinstance(runs, dict):
        ids.extend(v for v in runs.values() if isinstance(v, str))
    return ids


class IgnoresFixtureRuns(Behaviour):
    """RFC 0252 §D broken: `fixtureRuns` is dropped, so the named task runs live."""

    def request(self, forward: Forward) -> Forward:
        body = forward.json()
        if forward.method == "POST" and isinstance(body, dict) and "fixtureRuns" in body:
            body.pop("fixtureRuns")
            return forward.with_json(body)
        return forward


class EchoesRefusedId(Behaviour):
    """RFC 0251/0252 §C broken: "The refusal MUST NOT echo the supplied id"."""

    def response(self, forward: Forward, status: int, body: bytes) -> bytes:
        ids = _supplied_ids(forward)
        document = _decode(body)
        if status != 400 or not ids or not isinstance(document, dict):
            return body
        document["message"] = f"{document['message']} ({', '.join(ids)})"
        return _encode(document)


@dataclass
class TellsForeignTenant(Behaviour):
    """§C broken: another tenant's run is answered differently from an id that never existed."""

    tenant_of_key: dict[str, str] = field(default_factory=dict)

    def response(self, forward: Forward, status: int, body: bytes) -> bytes:
        caller = self.tenant_of_key.get(forward.headers.get("authorization", "")[7:])
        foreign = [i for i in _supplied_ids(forward) if i.split("/", 1)[0] != caller]
        document = _decode(body)
        if status != 400 or not foreign or not isinstance(document, dict):
            return body
        document["message"] = f"{document['message']} (other tenant)"
        return _encode(document)


class ComparesAggregates(Behaviour):
    """RFC 0244 §F broken: the verdict follows scoreDelta instead of the paired tasks."""

    def response(self, forward: Forward, status: int, body: bytes) -> bytes:
        document = _decode(body)
        regression = document.get("regression") if isinstance(document, dict) else None
        if not forward.path.endswith("/eval-summary") or not isinstance(regression, dict):
            return body
        if regression.get("scoreDelta", 0) > 0:
            regression["verdict"] = "improved"
        return _encode(document)


class DropsStartedFixtureRuns(Behaviour):
    """RFC 0252 §E broken: "A host MUST emit it when the request carried fixtureRuns"."""

    def response(self, forward: Forward, status: int, body: bytes) -> bytes:
        document = _decode(body)
        if not forward.path.endswith("/events/poll") or not isinstance(document, dict):
            return body
        for event in document.get("events", []):
            if event.get("type") == "eval.started":
                event["payload"].pop("fixtureRuns", None)
        return _encode(document)


class ServesAnyMajor(Behaviour):
    """versioning.md §1.1 broken: a major the host does not list is served as 2."""

    _MAJOR_3 = re.compile(r"^\s*3(\.\d+)?\s*$")

    def request(self, forward: Forward) -> Forward:
        if self._MAJOR_3.match(forward.headers.get("openwop-version", "")):
            headers = dict(forward.headers, **{"openwop-version": "2.0"})
            return Forward(forward.method, forward.path, forward.query, headers, forward.body)
        return forward


@dataclass
class HidesFromDiscovery(Behaviour):
    """Not a bug: a host that does not advertise some members or fixtures (the legs skip)."""

    members: tuple[str, ...] = ()
    fixtures: tuple[str, ...] = ()

    def response(self, forward: Forward, status: int, body: bytes) -> bytes:
        document = _decode(body)
        if (
            status != 200
            or forward.path != "/.well-known/openwop"
            or not isinstance(document, dict)
        ):
            return body
        facet = document["agents"]["evalSuite"]
        for member in self.members:
            facet.pop(member, None)
        document["fixtures"] = [f for f in document["fixtures"] if f not in self.fixtures]
        return _encode(document)
