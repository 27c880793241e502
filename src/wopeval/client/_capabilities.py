"""What a host accepts on an eval createRun, read from its discovery before anything is sent.

RFC 0251 §A: "A client MUST NOT send either property [`evalModes`,
`baselineRunId`] to a host that does not advertise" `agents.evalSuite.baselineSelection`;
RFC 0252 §A says the same of `fixtureRuns` and `recordedFixtures`. The client
reads the facet first and stops with the member's name, so a host that never
agreed to a property never receives a body carrying it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wopeval.client._request import EvalRequest
from wopeval.client._wire import ClientError, WireClient

EVAL_SUITE = "agents.evalSuite"
BASELINE_SELECTION = f"{EVAL_SUITE}.baselineSelection"
RECORDED_FIXTURES = f"{EVAL_SUITE}.recordedFixtures"


class MissingCapability(ClientError):
    """The host does not advertise a member the request needs; nothing was sent."""

    def __init__(self, member: str, needed_for: str) -> None:
        super().__init__(
            f"the host does not advertise {member}, so it takes no {needed_for}; "
            "no eval run was requested"
        )
        self.member = member


def missing_capability(
    discovery: Mapping[str, Any], body: Mapping[str, Any]
) -> MissingCapability | None:
    """What the createRun `body` needs that `discovery` does not advertise; None if nothing."""
    if body.get("mode") != "eval":
        return None
    agents = discovery.get("agents")
    facet = agents.get("evalSuite") if isinstance(agents, Mapping) else None
    if not isinstance(facet, Mapping):
        return MissingCapability(EVAL_SUITE, "eval runs")
    # An advertised member is `true`; absent or anything else does not count.
    if ("evalModes" in body or "baselineRunId" in body) and facet.get(
        "baselineSelection"
    ) is not True:
        return MissingCapability(
            BASELINE_SELECTION, "evalModes or baselineRunId (--modes, --baseline)"
        )
    if "fixtureRuns" in body and facet.get("recordedFixtures") is not True:
        return MissingCapability(RECORDED_FIXTURES, "fixtureRuns (--from-run)")
    return None


def require_eval_capabilities(host: WireClient, request: EvalRequest) -> None:
    """Raise `MissingCapability` unless the host advertises everything `request` sends."""
    missing = missing_capability(host.discovery(), request.body())
    if missing is not None:
        raise missing
