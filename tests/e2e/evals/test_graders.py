"""Graders on the real host: the new built-in strategies, a project's custom graders, and
suites naming a grader the host does not have (refused at push and at create)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from openwop_client.wire_id import project_id

from _backends import Backend

from .._server import TENANT_A, ServerHandle, free_port, host_settings, running_host
from .._support import unique
from ._evals import (
    counter_call,
    eval_body,
    new_suite_id,
    post_refused,
    publish,
    run_eval,
    suite,
    task,
)
from .conftest import BROKEN_GRADER, TIER_GRADER, TRACE_GRADER


def custom(grader: str, value: Any = None) -> dict[str, Any]:
    return {"kind": "golden", "match": {"strategy": "custom", "grader": grader, "value": value}}


def golden(strategy: str, **match: Any) -> dict[str, Any]:
    return {"kind": "golden", "match": {"strategy": strategy, **match}}


def task_results(summary: dict[str, Any]) -> dict[str, bool]:
    return {t["taskId"]: t["passed"] for t in summary["tasks"]}


def reasons(http: httpx.Client, run_id: str) -> dict[str, str]:
    """Each task's reason line, as the host's task route gives it."""
    response = http.get(f"/host/wopeval/runs/{project_id(run_id)}/tasks")
    assert response.status_code == 200, response.text
    return {line["taskId"]: line["reason"] for line in response.json()["tasks"]}


def trial(http: httpx.Client, run_id: str, task_id: str) -> dict[str, Any]:
    response = http.get(f"/host/wopeval/runs/{project_id(run_id)}/tasks/{task_id}")
    assert response.status_code == 200, response.text
    detail: dict[str, Any] = response.json()["trialDetails"][0]
    return detail


def test_json_subset_json_path_and_regex_pass_and_fail_on_purpose(
    server: ServerHandle, http_a: httpx.Client
) -> None:
    subset = golden("json-subset", value={"action": "refund"})
    paths = golden("json-path", paths=[{"path": "$.customer.tier", "value": "gold"},
                                       {"path": '$["line items"][-1]', "value": 5}])  # fmt: skip
    pattern = golden("regex", value=r"^refund(ed)? \$\d+$")
    ref = publish(http_a, suite(new_suite_id("strategies"), [
        task("subset-holds", answer={"action": "refund", "amount": 5}, expected=subset),
        task("subset-differs", answer={"action": "escalate", "amount": 5}, expected=subset),
        task("paths-hold", answer={"customer": {"tier": "gold"}, "line items": [1, 5]},
             expected=paths),
        task("paths-differ", answer={"customer": {"tier": "gold"}, "line items": [5, 1]},
             expected=paths),
        task("regex-matches", answer="refunded $5", expected=pattern),
        task("regex-misses", answer="refund of $5", expected=pattern),
    ]))  # fmt: skip
    run = run_eval(server.client(), http_a, ref)
    assert task_results(run.summary) == {
        "subset-holds": True,
        "subset-differs": False,
        "paths-hold": True,
        "paths-differ": False,
        "regex-matches": True,
        "regex-misses": False,
    }
    assert {p["taskId"]: p["passed"] for p in run.of_type("eval.scored")} == task_results(
        run.summary
    )
    why = reasons(http_a, run.run_id)
    assert why["subset-holds"] == why["paths-hold"] == why["regex-matches"] == "passed"
    assert why["subset-differs"].startswith("json-subset: ")
    assert "$.action" in why["subset-differs"]
    assert '"escalate"' in why["subset-differs"]
    assert why["paths-differ"].startswith("json-path: ")
    assert why["paths-differ"].endswith('$["line items"][1]: expected 5, got 1')
    assert why["regex-misses"].startswith("regex: ")
    assert "refund of $5" in why["regex-misses"]
    diff = trial(http_a, run.run_id, "subset-differs")["grade"]["diff"]
    assert diff == [{"path": "$.action", "kind": "changed", "expected": "refund",
                     "actual": "escalate"}]  # fmt: skip


def test_a_pattern_or_path_the_host_cannot_read_is_refused_at_push(http_a: httpx.Client) -> None:
    document = suite(new_suite_id("unreadable"), [
        task("ok"),
        task("pattern", expected=golden("regex", value="refund(ed")),
        task("path", expected=golden("json-path", paths=[{"path": "$.items[*]", "value": 1}])),
    ])  # fmt: skip
    response = http_a.put("/host/wopeval/suites", json=document)
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "validation_error"
    problems = response.json()["message"].split("; ")
    assert problems[0].startswith("tasks[1].expected.match.value: not a valid regular expression")
    assert problems[1].startswith("tasks[2].expected.match.paths[0].path: not a JSONPath")
    ref = f"{document['suiteId']}@{document['version']}"
    assert http_a.get(f"/host/wopeval/suites/{ref}").status_code == 404


def test_custom_graders_pass_and_fail_and_one_that_raises_fails_only_its_task(
    eval_project_server: ServerHandle,
) -> None:
    key = unique("graders")
    two_calls = [counter_call("inc", key), counter_call("read", key)]
    with eval_project_server.http(TENANT_A) as http:
        ref = publish(http, suite(new_suite_id("custom"), [
            task("tier-holds", answer={"tier": "gold"}, expected=custom(TIER_GRADER, "gold")),
            task("tier-differs", answer={"tier": "silver"}, expected=custom(TIER_GRADER, "gold")),
            task("grader-raises", answer={"tier": "gold"}, expected=custom(BROKEN_GRADER)),
            # The async grader counts the trace's ok live calls: both calls reach it.
            task("trace-two", two_calls, expected=custom(TRACE_GRADER, 2)),
            task("trace-one", two_calls[:1], expected=custom(TRACE_GRADER, 2)),
            task("built-in", answer="done"),
        ]))  # fmt: skip
        run = run_eval(eval_project_server.client(), http, ref)  # asserts run.completed
    assert task_results(run.summary) == {
        "tier-holds": True,
        "tier-differs": False,
        "grader-raises": False,
        "trace-two": True,
        "trace-one": False,
        "built-in": True,
    }
    assert (run.summary["taskCount"], run.summary["passedCount"]) == (6, 3)
    assert len(run.of_type("eval.scored")) == 6
    with eval_project_server.http(TENANT_A) as http:
        why = reasons(http, run.run_id)
        raised = trial(http, run.run_id, "grader-raises")["grade"]
    assert why["tier-differs"].endswith("tier silver")
    assert why["trace-one"].endswith("1 ok live calls")
    assert "RuntimeError" in why["grader-raises"]
    assert "the grader broke" in raised["traceback"]


def test_a_suite_naming_an_unknown_grader_is_refused_at_push(
    eval_project_server: ServerHandle, http_a: httpx.Client
) -> None:
    document = suite(new_suite_id("unknown"), [
        task("known", answer={"tier": "gold"}, expected=custom(TIER_GRADER, "gold")),
        task("unknown", expected=custom("e2e.no-such-grader")),
    ])  # fmt: skip
    ref = f"{document['suiteId']}@{document['version']}"
    with eval_project_server.http(TENANT_A) as http:
        response = http.put("/host/wopeval/suites", json=document)
        assert response.status_code == 400, response.text
        assert response.json() == {
            "error": "validation_error",
            "message": "tasks[1].expected.match.grader: "
            "this host declares no grader 'e2e.no-such-grader'",
        }
        assert http.get(f"/host/wopeval/suites/{ref}").status_code == 404
    # A host without that project's graders refuses even the one its project host knows.
    refused = http_a.put("/host/wopeval/suites", json=document)
    assert refused.status_code == 400
    assert refused.json()["message"].startswith(
        f"tasks[0].expected.match.grader: this host declares no grader '{TIER_GRADER}'; "
    )


GONE_MODULE = "wopeval_e2e_gone_graders"


@pytest.fixture
def graders_project(tmp_path: Path) -> Iterator[Path]:
    """A project declaring one grader, `e2e.soon-gone`, that a later host will not have."""
    (tmp_path / f"{GONE_MODULE}.py").write_text(
        "def check(decision, expected, calls):\n"
        "    return {'passed': decision == expected, 'score': 1, 'reason': 'compared'}\n"
    )
    (tmp_path / "wopeval.toml").write_text(
        f'[[graders]]\nid = "e2e.soon-gone"\ncallable = "{GONE_MODULE}:check"\n'
    )
    try:
        yield tmp_path
    finally:
        sys.path[:] = [p for p in sys.path if p != str(tmp_path.resolve())]
        sys.modules.pop(GONE_MODULE, None)


def test_an_eval_of_a_suite_whose_grader_is_gone_is_refused_at_create(
    backend: Backend, tmp_path_factory: pytest.TempPathFactory, graders_project: Path
) -> None:
    data_dir = tmp_path_factory.mktemp(f"graders-gone-{backend.name}")
    settings = host_settings(backend, data_dir, project=graders_project)
    document = suite(new_suite_id("gone"), [
        task("plain"),
        task("graded", answer="done", expected=custom("e2e.soon-gone", "done")),
    ])  # fmt: skip
    with running_host(settings, backend) as first, first.http(TENANT_A) as http:
        ref = publish(http, document)
        assert run_eval(first.client(), http, ref).summary["passed"] is True
    # The same database, restarted without the project: the stored suite names a lost grader.
    later = settings.model_copy(update={"project": None, "port": free_port()})
    with running_host(later, backend) as second, second.http(TENANT_A) as http:
        response = post_refused(http, eval_body(ref), 400, "validation_error")
        assert response.json()["message"] == (
            "tasks[1].expected.match.grader: this host declares no grader 'e2e.soon-gone'"
        )
