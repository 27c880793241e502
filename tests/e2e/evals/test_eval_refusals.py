"""Eval createRun refusals of the plain host, and tenant suites: each refusal creates no run."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from .._server import ServerHandle
from .._support import COUNTER_TOOL
from ._evals import (
    REGRESSION_BASE,
    SCRIPTED_AGENT,
    eval_body,
    new_suite_id,
    post_refused,
    publish,
    run_eval,
    suite,
    task,
)


def test_an_unknown_suite_ref_is_400(http_a: httpx.Client) -> None:
    for ref in ("conformance-eval-nothing", f"{new_suite_id('absent')}@1.0.0",
                "suite://conformance.openwop.evals.regression@9.9.9", "Not A Ref!"):  # fmt: skip
        response = post_refused(http_a, eval_body(ref), 400, "validation_error")
        assert ref not in response.text


def test_an_unknown_agent_is_400(http_a: httpx.Client) -> None:
    response = post_refused(http_a, eval_body(REGRESSION_BASE, "no.such-agent"), 400,
                            "validation_error")  # fmt: skip
    assert "agentId" in response.json()["message"]


def test_an_agent_other_than_the_target_is_400(http_a: httpx.Client) -> None:
    document = suite(new_suite_id("target"), [task("t")], target="some.other-agent")
    ref = publish(http_a, document)
    response = post_refused(http_a, eval_body(ref, SCRIPTED_AGENT), 400, "validation_error")
    assert "targetAgentId" in response.json()["message"]


@pytest.mark.parametrize(
    ("suite_modes", "requested", "why"),
    [
        (("golden",), ["live-shadow"], "suite does not declare"),
        (("golden", "adversarial"), ["adversarial"], "host does not advertise"),
        (("golden", "adversarial"), ["golden", "adversarial"], "host does not advertise"),
    ],
    ids=["outside-suite", "outside-host", "outside-host-with-golden"],
)
def test_a_mode_the_suite_or_host_does_not_support_is_400(
    http_a: httpx.Client, suite_modes: tuple[str, ...], requested: list[str], why: str
) -> None:
    ref = publish(http_a, suite(new_suite_id("modes"), [task("t")], modes=suite_modes))
    response = post_refused(http_a, eval_body(ref, evalModes=requested), 400, "validation_error")
    assert why in response.json()["message"]


def test_an_invalid_suite_is_refused_with_the_pointer(http_a: httpx.Client) -> None:
    suite_id = new_suite_id("invalid")
    fixtures = {"toolResponses": [{"tool": COUNTER_TOOL, "args": {}, "response": 1,
                                   "argsMatch": "fuzzy"}]}  # fmt: skip
    document = suite(suite_id, [task("t", fixtures=fixtures)])
    response = http_a.put("/host/wopeval/suites", json=document)
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "validation_error"
    assert "tasks[0].fixtures.toolResponses[0].argsMatch" in body["message"]
    assert "fuzzy" not in body["message"]
    assert suite_id not in http_a.get("/host/wopeval/suites").text
    assert http_a.get(f"/host/wopeval/suites/{suite_id}@1.0.0").status_code == 404


@pytest.mark.parametrize(
    ("change", "pointer"),
    [
        ({"suiteId": "not-a-suite-id"}, "suiteId"),
        ({"version": "1.0"}, "version"),
        ({"modes": []}, "modes"),
        ({"tasks": []}, "tasks"),
        ({"unknown": 1}, "unknown"),
        ({"tasks": [task("a"), task("a")]}, "tasks"),
        ({"tasks": [{"taskId": "a", "input": {}, "expected": {"kind": "golden"}}]},
         "tasks[0].expected"),
    ],
    ids=["suite-id", "version", "no-modes", "no-tasks", "unknown-key", "duplicate-task",
         "golden-without-match"],
)  # fmt: skip
def test_more_invalid_suites_are_400(
    http_a: httpx.Client, change: dict[str, Any], pointer: str
) -> None:
    document = {**suite(new_suite_id("invalid"), [task("t")]), **change}
    response = http_a.put("/host/wopeval/suites", json=document)
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "validation_error"
    assert pointer in response.json()["message"]


def test_two_versions_coexist_and_a_version_is_immutable(
    server: ServerHandle, http_a: httpx.Client
) -> None:
    suite_id = new_suite_id("versions")
    first = suite(suite_id, [task("one", answer="1")], version="1.0.0")
    second = suite(suite_id, [task("one", answer="1"), task("two", answer="2")], version="1.1.0")
    ref_1, ref_2 = publish(http_a, first), publish(http_a, second)

    assert http_a.get(f"/host/wopeval/suites/{ref_1}").json() == first
    assert http_a.get(f"/host/wopeval/suites/{ref_2}").json() == second
    listed = [s for s in http_a.get("/host/wopeval/suites").json()["suites"]
              if s["suiteId"] == suite_id]  # fmt: skip
    assert sorted((s["version"], s["taskCount"], s["scope"]) for s in listed) == [
        ("1.0.0", 1, "tenant"), ("1.1.0", 2, "tenant")]  # fmt: skip

    again = http_a.put("/host/wopeval/suites", json=first)
    assert again.status_code == 200
    changed = http_a.put("/host/wopeval/suites", json={**first, "modes": ["golden", "regression"]})
    assert changed.status_code == 409
    assert changed.json()["error"] == "wopeval.suite_version_exists"
    assert http_a.get(f"/host/wopeval/suites/{ref_1}").json() == first

    client = server.client()
    assert run_eval(client, http_a, ref_1).summary["taskCount"] == 1
    assert run_eval(client, http_a, ref_2).summary["taskCount"] == 2


def test_tenant_b_never_sees_tenant_a_suites(http_a: httpx.Client, http_b: httpx.Client) -> None:
    suite_id = new_suite_id("private")
    ref = publish(http_a, suite(suite_id, [task("t")]))
    assert http_a.get(f"/host/wopeval/suites/{ref}").status_code == 200

    assert suite_id not in http_b.get("/host/wopeval/suites").text
    missing = http_b.get(f"/host/wopeval/suites/{ref}")
    assert missing.status_code == 404
    assert missing.json()["error"] == "not_found"
    response = post_refused(http_b, eval_body(ref), 400, "validation_error")
    assert suite_id not in response.text
    # ...and the unknown-suite refusal B gets is the one any unknown ref gets.
    unknown = post_refused(http_b, eval_body(f"{new_suite_id('none')}@1.0.0"), 400,
                           "validation_error")  # fmt: skip
    assert unknown.content == response.content

    # B may publish the same suiteId@version for itself; A's document is untouched.
    theirs = suite(suite_id, [task("t"), task("u")])
    assert http_b.put("/host/wopeval/suites", json=theirs).status_code == 201
    assert len(http_a.get(f"/host/wopeval/suites/{ref}").json()["tasks"]) == 1
    assert len(http_b.get(f"/host/wopeval/suites/{ref}").json()["tasks"]) == 2


def test_seeded_suites_are_listed_for_every_tenant(
    http_a: httpx.Client, http_b: httpx.Client
) -> None:
    for http in (http_a, http_b):
        shared = {s["fixtureId"]: s for s in http.get("/host/wopeval/suites").json()["suites"]
                  if s["scope"] == "host"}  # fmt: skip
        assert shared[REGRESSION_BASE]["suiteId"] == "conformance.openwop.evals.regression"
        assert shared[REGRESSION_BASE]["taskCount"] == 3
