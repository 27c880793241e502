"""Rubric tasks graded by a project's judge (RFC 0081 §A rubric, §D; docs/graders.md).

The judge is the strict local model server (tests/_model_server), spoken to over
Chat Completions; the agent is the seeded scripted agent, which decides the
task's `answer`. A judge call is counted at the model server, so "zero judge
calls the second time" is measured where the calls would land.
"""

from __future__ import annotations

import json
import secrets
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from openwop_client.wire_id import project_id
from rich.console import Console

from _backends import Backend
from _model_server import ModelServer
from wopeval import reports
from wopeval.cli._why import explanation
from wopeval.reports._drilldown import drilldown
from wopeval.settings import EvalFeatures
from wopeval.wire.task_detail import TaskDetail

from .._server import TENANT_A, TENANT_B, ServerHandle, host_settings, running_host
from ._evals import (
    assert_content_free,
    eval_body,
    eval_request,
    finish,
    new_suite_id,
    post_refused,
    publish,
    run_eval,
    suite,
    task,
)

KEY_ENV = "RUBRIC_TEST_JUDGE_KEY"
JUDGE_ID = "e2e.judge"
JUDGE_MODEL = "judge-mini"
PHRASE = "You are the e2e rubric judge."
CRITERIA = ("cites the 30-day window", "offers a refund")


@pytest.fixture(scope="module")
def model_server() -> Iterator[ModelServer]:
    with ModelServer() as server:
        yield server


@pytest.fixture(scope="module")
def judge_key() -> Iterator[str]:
    key = "sk-judge-" + secrets.token_hex(16)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(KEY_ENV, key)
        yield key


def write_project(
    directory: Path, model_url: str, *, prompt_tail: str = "", more: str = ""
) -> Path:
    """The judge's project; `prompt_tail` changes its prompt, `more` adds TOML tables."""
    prompt = PHRASE + prompt_tail + " Task: $input\\nCriteria:\\n$criteria\\nScore each $scale."
    (directory / "wopeval.toml").write_text(
        f"""[[judges]]
id = "{JUDGE_ID}"
model = "{JUDGE_MODEL}"
api = "chat"
base_url = "{model_url}"
api_key_env = "{KEY_ENV}"
prompt = "{prompt}"
scale = 4
threshold = 0.7
gate = true
retries = 0

[models."{JUDGE_MODEL}"]
input_per_mtok = 1.0
output_per_mtok = 2.0
{more}"""
    )
    return directory


@pytest.fixture(scope="module")
def judged_host(
    backend: Backend,
    tmp_path_factory: pytest.TempPathFactory,
    model_server: ModelServer,
    judge_key: str,
) -> Iterator[ServerHandle]:
    project = write_project(tmp_path_factory.mktemp("rubric-project"), model_server.base_url)
    data_dir = tmp_path_factory.mktemp(f"rubric-host-{backend.name}")
    with running_host(host_settings(backend, data_dir, project=project), backend) as handle:
        yield handle


def rubric(*weights: float) -> dict[str, Any]:
    items = [{"criterion": c, "weight": w} for c, w in zip(CRITERIA, weights, strict=True)]
    return {"kind": "rubric", "rubric": items}


def script_judgement(server: ModelServer, answer: str, *scores: int) -> None:
    """The judge's answer to any judgement of `answer` (the output is the user message)."""
    entries = [
        {"criterion": n, "score": s, "reason": f"judge says {n}:{s}"}
        for n, s in enumerate(scores, 1)
    ]
    server.script.add(answer, [{"json": {"criteria": entries}}], system_contains=PHRASE)


def judge_calls(server: ModelServer, answer: str) -> int:
    return len(server.script.requests_with(answer))


def trial(http: httpx.Client, run_id: str, task_id: str) -> dict[str, Any]:
    response = http.get(f"/host/wopeval/runs/{project_id(run_id)}/tasks/{task_id}")
    assert response.status_code == 200, response.text
    detail: dict[str, Any] = response.json()["trialDetails"][0]
    return detail


def criteria_of(detail: dict[str, Any]) -> list[tuple[float | None, bool]]:
    return [(c["score"], c["passed"]) for c in detail["grade"]["judge"]["criteria"]]


def rubric_suite(http: httpx.Client, good: str, bad: str) -> str:
    return publish(
        http,
        suite(
            new_suite_id("rubric"),
            [
                task("good", answer=good, expected=rubric(0.5, 0.5)),
                task("bad", answer=bad, expected=rubric(0.75, 0.25)),
            ],
            modes=("rubric", "regression"),
        ),
    )


def shown_everywhere(host: ServerHandle, http: httpx.Client, run_id: str) -> None:
    """Each criterion's grade, with the exchange that graded it, in `wopeval explain`, the
    HTML report's drill-down and the dashboard's task page."""
    response = http.get(f"/host/wopeval/runs/{project_id(run_id)}/tasks/bad")
    assert response.status_code == 200, response.text
    detail = TaskDetail.model_validate(response.json())
    criterion = "FAIL 0.00 (weight 0.75) cites the 30-day window — judge says 1:0"
    console = Console(width=400, record=True)
    console.print(explanation(detail, every_trial=True))
    explained = console.export_text()
    assert f"judge {JUDGE_ID} (sha256:" in explained
    assert f"{criterion}  exchange #0 live" in explained
    assert f"{criterion} [exchange #0 live, " in reports.detail_text(detail)
    html = drilldown(detail)
    assert '<table class="rubric">' in html
    assert '<td class="exchange">#0 live, ' in html
    with httpx.Client(base_url=host.base_url, trust_env=False) as browser:
        signed = browser.post("/ui/sign-in", data={"key": host.keys[TENANT_A], "next": "/ui/runs"})
        assert signed.status_code == 303, signed.text
        page = browser.get(f"/ui/evals/{project_id(run_id)}/tasks/bad")
        assert page.status_code == 200, page.text
    assert "judge says 1:0" in page.text
    assert '<a href="#trial-0-exchange-0">#0 live, ' in page.text
    assert 'id="trial-0-exchange-0"' in page.text


def test_a_rubric_eval_is_judged_live_then_replayed_with_no_judge_call(
    judged_host: ServerHandle, model_server: ModelServer, judge_key: str
) -> None:
    tag = uuid.uuid4().hex[:8]
    good, bad = f"We refund within 30 days ({tag}).", f"No refunds ({tag})."
    script_judgement(model_server, good, 4, 3)
    script_judgement(model_server, bad, 0, 4)
    client = judged_host.client()
    with judged_host.http() as http:
        ref = rubric_suite(http, good, bad)
        # The official client creates the rubric-mode eval.
        created = client.runs_create(eval_request(ref, evalModes=["rubric"]))
        first = finish(client, http, created.runId)
        assert first.started["modes"] == ["rubric"]
        assert {t["taskId"]: t["passed"] for t in first.summary["tasks"]} == {
            "good": True,
            "bad": False,
        }
        assert (judge_calls(model_server, good), judge_calls(model_server, bad)) == (1, 1)
        # The judge's key went to the judge, in the header its API reads it from.
        (received,) = model_server.script.requests_with(good)
        assert received.authorization == f"Bearer {judge_key}"

        detail = trial(http, first.run_id, "good")
        grade = detail["grade"]
        # (4/4 + 3/4) / 2 = 0.875 >= 0.7.
        assert grade["score"] == pytest.approx(0.875)
        judge = grade["judge"]
        assert (judge["judgeId"], judge["gate"]) == (JUDGE_ID, True)
        assert judge["digest"].startswith("sha256:")
        assert criteria_of(detail) == [(1.0, True), (0.75, True)]
        assert [c["reason"] for c in judge["criteria"]] == ["judge says 1:4", "judge says 2:3"]
        # Each criterion links to the judge's recorded exchange among the trial's model calls.
        exchange = detail["modelCalls"][judge["criteria"][0]["exchange"]]
        assert exchange["via"] == "judge"
        assert exchange["servedBy"] == "live"
        assert exchange["agentId"] == f"judge:{JUDGE_ID}"
        assert exchange["costUsd"] > 0
        assert exchange["promptTokens"] > 0
        assert first.task("good")["costUsd"] == pytest.approx(exchange["costUsd"])
        assert first.summary["totalCostUsd"] > 0

        failed = trial(http, first.run_id, "bad")["grade"]
        assert failed["score"] == pytest.approx(0.25)
        assert failed["reason"] == (
            f"rubric ({JUDGE_ID}): score 0.25 < threshold 0.7; "
            "failed: 'cites the 30-day window' (0.00: judge says 1:0)"
        )

        shown_everywhere(judged_host, http, first.run_id)

        # Content-free wire: no rubric prose, judge words or output in the summary or events.
        markers = (*CRITERIA, "judge says", tag)
        assert_content_free(first.summary, markers)
        for event in first.events:
            if event.type.startswith("eval."):
                assert_content_free(event.payload, markers)

        # The same eval against its baseline: the judge's recorded judgements answer.
        second = run_eval(client, http, ref, evalModes=["rubric", "regression"],
                          baselineRunId=first.run_id)  # fmt: skip
        assert (judge_calls(model_server, good), judge_calls(model_server, bad)) == (1, 1)
        assert [t["score"] for t in second.summary["tasks"]] == [
            t["score"] for t in first.summary["tasks"]
        ]
        assert second.summary["regression"]["verdict"] == "unchanged"
        replayed = trial(http, second.run_id, "good")
        assert criteria_of(replayed) == criteria_of(detail)
        assert replayed["grade"]["score"] == grade["score"]
        served = replayed["modelCalls"][replayed["grade"]["judge"]["criteria"][0]["exchange"]]
        assert (served["via"], served["servedBy"]) == ("judge", "replay")

        # A judge source named on its own (no baseline), itself a replay: still no call.
        extension = {"version": 1, "extensions": {"wopeval": {"judgeSourceRunId": second.run_id}}}
        response = http.post("/runs", json=eval_body(ref, configurable=extension))
        assert response.status_code == 201, response.text
        third = finish(client, http, response.json()["runId"])
        assert (judge_calls(model_server, good), judge_calls(model_server, bad)) == (1, 1)
        assert criteria_of(trial(http, third.run_id, "bad")) == criteria_of(
            trial(http, first.run_id, "bad")
        )


def test_judgements_share_the_hosts_kept_connection_to_the_judge(
    judged_host: ServerHandle, model_server: ModelServer
) -> None:
    """The judge is asked with the host's outbound client, not a client of its own per
    judgement: a judgement made right after another opens no connection."""
    answers = [f"Within 30 days ({uuid.uuid4().hex[:8]})." for _ in range(2)]
    client = judged_host.client()
    with judged_host.http() as http:
        connections = []
        for answer in answers:
            script_judgement(model_server, answer, 4, 4)
            ref = publish(http, suite(new_suite_id("kept"),
                                      [task("t", answer=answer, expected=rubric(0.5, 0.5))],
                                      modes=("rubric",)))  # fmt: skip
            run_eval(client, http, ref)
            assert judge_calls(model_server, answer) == 1
            connections.append(model_server.stats.connections)
    assert connections[1] == connections[0]


def test_erasing_a_judge_source_erases_the_copies_of_its_judgements(
    judged_host: ServerHandle, model_server: ModelServer
) -> None:
    answer = f"Within 30 days ({uuid.uuid4().hex[:8]})."
    script_judgement(model_server, answer, 4, 4)
    client = judged_host.client()
    with judged_host.http() as http:
        ref = publish(http, suite(new_suite_id("erased"),
                                  [task("t", answer=answer, expected=rubric(0.5, 0.5))],
                                  modes=("rubric",)))  # fmt: skip

        def judged_from(source: str | None) -> str:
            body = eval_body(ref)
            if source is not None:
                extension = {"judgeSourceRunId": source}
                body["configurable"] = {"version": 1, "extensions": {"wopeval": extension}}
            response = http.post("/runs", json=body)
            assert response.status_code == 201, response.text
            run_id: str = finish(client, http, response.json()["runId"]).run_id
            return run_id

        source = judged_from(None)
        taker = judged_from(source)
        assert judge_calls(model_server, answer) == 1
        erased = http.post(f"/host/wopeval/runs/{project_id(source)}:erase-tool-content")
        assert erased.status_code == 200, erased.text
        # The source and the run that copied its judgements, each with its copy erased.
        assert (erased.json()["erasedRuns"], erased.json()["erasedCopies"]) == (2, 1)
        assert trial(http, taker, "t")["modelCalls"][0].get("response") is None
        # An erased judgement answers nothing: the judge is asked again.
        judged_from(source)
        assert judge_calls(model_server, answer) == 2


def test_a_judgement_the_judge_cannot_give_leaves_the_trial_unjudged(
    judged_host: ServerHandle, model_server: ModelServer
) -> None:
    answer = f"Maybe ({uuid.uuid4().hex[:8]})."
    # One criterion judged twice, one left out: no judgement of these criteria.
    entries = [{"criterion": 1, "score": 4}, {"criterion": 1, "score": 2}]
    model_server.script.add(answer, [{"json": {"criteria": entries}}], system_contains=PHRASE)
    with judged_host.http() as http:
        ref = publish(http, suite(new_suite_id("unreadable"),
                                  [task("t", answer=answer, expected=rubric(0.5, 0.5))],
                                  modes=("rubric",)))  # fmt: skip
        run = run_eval(judged_host.client(), http, ref)
        assert not run.task("t")["passed"]
        assert run.task("t")["unjudgedTrials"] == 1
        grade = trial(http, run.run_id, "t")["grade"]
        assert grade["reason"].startswith(f"rubric ({JUDGE_ID}): unjudged: criteria ")
        assert grade["judge"]["unjudged"] == "criterion 1 is unknown or judged twice"


def test_a_rubric_without_a_judge_or_with_an_unknown_judge_source_is_400(
    server: ServerHandle, judged_host: ServerHandle, http_a: httpx.Client
) -> None:
    ref = publish(http_a, suite(new_suite_id("nojudge"),
                                [task("t", answer="x", expected=rubric(1, 0))],
                                modes=("rubric",)))  # fmt: skip
    response = post_refused(http_a, eval_body(ref), 400, "validation_error")
    assert "a rubric needs a judge" in response.json()["message"]

    with judged_host.http() as http, judged_host.http(TENANT_B) as other:
        judged_ref = publish(http, suite(new_suite_id("source"),
                                         [task("t", answer="x", expected=rubric(1, 0))],
                                         modes=("rubric",)))  # fmt: skip
        theirs = publish(other, suite(new_suite_id("theirs"), [task("t")]))
        their_run = run_eval(judged_host.client(TENANT_B), other, theirs).run_id

        def named(source: str) -> bytes:
            extension = {"version": 1, "extensions": {"wopeval": {"judgeSourceRunId": source}}}
            body = eval_body(judged_ref, configurable=extension)
            return post_refused(http, body, 400, "validation_error").content

        # Another tenant's run and no run at all are refused alike, never echoing the id.
        unknown = named(their_run.replace(their_run.partition("/")[2], "r" * 26))
        assert named(their_run) == unknown
        assert b"judgeSourceRunId does not name a run" in unknown


def test_offline_a_new_judgement_fails_closed_as_unjudged_and_inconclusive(
    backend: Backend,
    tmp_path_factory: pytest.TempPathFactory,
    model_server: ModelServer,
    judge_key: str,
) -> None:
    tag = uuid.uuid4().hex[:8]
    known, new = f"Within 30 days ({tag}).", f"Changed answer ({tag})."
    script_judgement(model_server, known, 4, 4)
    script_judgement(model_server, new, 4, 4)
    project = write_project(tmp_path_factory.mktemp("rubric-offline"), model_server.base_url)
    data_dir = tmp_path_factory.mktemp(f"rubric-offline-{backend.name}")
    settings = host_settings(backend, data_dir, project=project)
    document = suite(new_suite_id("offline"),
                     [task("same", answer=known, expected=rubric(0.5, 0.5)),
                      task("changed", answer=known, expected=rubric(0.5, 0.5))],
                     modes=("rubric", "regression"))  # fmt: skip
    with running_host(settings, backend) as live, live.http() as http:
        ref = publish(http, document)
        baseline = run_eval(live.client(), http, ref)
        assert baseline.summary["passed"]
    # The same database, on a host that replays model answers (`--replay-model`).
    replaying = settings.model_copy(update={"eval": EvalFeatures(model_replay=True)})
    document["version"] = "1.0.1"
    document["tasks"][1]["input"]["answer"] = new
    with running_host(replaying, backend) as host, host.http() as http:
        ref = publish(http, document)
        run = run_eval(host.client(), http, ref, evalModes=["rubric", "regression"],
                       baselineRunId=baseline.run_id)  # fmt: skip
    assert judge_calls(model_server, known) == 2  # both baseline tasks, none since
    assert judge_calls(model_server, new) == 0
    assert run.task("same")["passed"]
    changed = run.task("changed")
    assert (changed["passed"], changed["unjudgedTrials"]) == (False, 1)
    # A judgement no recording holds is no fixture miss of the agent's.
    assert changed["fixtureMissCount"] == 0
    verdicts = {t["taskId"]: t["verdict"] for t in run.summary["regression"]["tasks"]}
    assert verdicts == {"same": "unchanged", "changed": "inconclusive"}
    # Its judge was never calibrated: every task is advisory, so none counts toward the
    # run's verdict (docs/graders.md, "Calibration").
    assert run.summary["regression"]["verdict"] == "unchanged"
    with running_host(replaying, backend) as host, host.http() as http:
        grade = trial(http, run.run_id, "changed")["grade"]
    assert grade["reason"] == (
        f"rubric ({JUDGE_ID}): unjudged: criteria {CRITERIA[0]!r}, {CRITERIA[1]!r}: "
        f"no recorded judgement for this request ({baseline.run_id}) and this run calls "
        "no judge"
    )
    assert json.dumps(run.summary).count("unjudged") == 1


def test_a_host_that_does_not_advertise_rubric_refuses_rubric_tasks(
    backend: Backend,
    tmp_path_factory: pytest.TempPathFactory,
    model_server: ModelServer,
    judge_key: str,
) -> None:
    project = write_project(tmp_path_factory.mktemp("rubric-off"), model_server.base_url)
    data_dir = tmp_path_factory.mktemp(f"rubric-off-{backend.name}")
    features = EvalFeatures(modes=("golden", "regression"))
    settings = host_settings(backend, data_dir, project=project, eval=features)
    with running_host(settings, backend) as host, host.http() as http:
        modes = host.client().discovery_capabilities().raw["agents"]["evalSuite"]["modes"]
        assert "rubric" not in modes
        ref = publish(http, suite(new_suite_id("off"),
                                  [task("t", answer="x", expected=rubric(1, 0))]))  # fmt: skip
        response = post_refused(http, eval_body(ref), 400, "validation_error")
        assert "tasks[0].expected.kind" in response.json()["message"]
