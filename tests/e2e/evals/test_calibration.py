"""Calibrated gates (docs/graders.md, "Calibration"): `wopeval judges calibrate` pairs a judge's
verdicts with people's labels, and a `gate = true` judge gates only while its latest
calibration at its current digest clears the project's floor.

The judge is the strict local model server (tests/_model_server) over Chat Completions; the
labels are real RFC 0056 annotations posted through the wire; the CLI runs as a process
against the running host.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from openwop_client.wire_id import project_id

from _backends import Backend
from _model_server import ModelServer
from _processes import free_port
from cli._support import run_cli

from .._server import TENANT_A, TENANT_B, ServerHandle, host_settings, running_host
from ._evals import new_suite_id, publish, run_eval, suite, task
from .test_rubric import (  # noqa: F401 (module fixtures: the judge's server and key)
    JUDGE_ID,
    judge_calls,
    judge_key,
    model_server,
    rubric,
    script_judgement,
    write_project,
)

UNCALIBRATED = f"advisory: judge {JUDGE_ID} is not calibrated (kappa n/a, n 0)"


FLOOR = """
[calibration]
kappa_min = 0.5
min_labels = 4
"""
"""A floor four labels can clear (kappa >= 0.5 over >= 4); the judge has `gate = true`."""


def label(http: httpx.Client, run_id: str, task_id: str, verdict: str) -> None:
    body = {"signal": {"kind": "label", "label": verdict}, "target": {"nodeId": task_id}}
    response = http.post(f"/runs/{project_id(run_id)}/annotations", json=body)
    assert response.status_code == 201, response.text


def calibrate(host: ServerHandle, *args: str, tenant: str = TENANT_A) -> Any:
    done = run_cli("judges", "calibrate", JUDGE_ID, "--url", host.base_url,
                   "--api-key", host.keys[tenant], *args)  # fmt: skip
    assert done.code == 0, done.stdout + done.stderr
    return json.loads(done.stdout) if "--json" in args else " ".join(done.stdout.split())


def reported(host: ServerHandle, run_id: str, tmp: Path) -> tuple[str, str, str]:
    """`wopeval report`: its printed summary, its JUnit file and its Markdown file."""
    junit, markdown = tmp / "junit.xml", tmp / "summary.md"
    done = run_cli("report", run_id, "--url", host.base_url, "--api-key", host.keys[TENANT_A],
                   "--junit", str(junit), "--markdown", str(markdown))  # fmt: skip
    assert done.code == 0, done.stdout + done.stderr
    return " ".join(done.stdout.split()), junit.read_text(), markdown.read_text()


def dashboard(host: ServerHandle, run_id: str) -> str:
    with httpx.Client(base_url=host.base_url, trust_env=False) as browser:
        signed = browser.post("/ui/sign-in", data={"key": host.keys[TENANT_A], "next": "/ui/runs"})
        assert signed.status_code == 303, signed.text
        page = browser.get(f"/ui/evals/{project_id(run_id)}")
        assert page.status_code == 200, page.text
        return page.text


def test_a_gate_judge_gates_only_while_its_calibration_at_its_digest_clears_the_floor(
    backend: Backend,
    tmp_path_factory: pytest.TempPathFactory,
    model_server: ModelServer,  # noqa: F811
    judge_key: str,  # noqa: F811
) -> None:
    tag = uuid.uuid4().hex[:8]
    answers = {f"t{n}": f"Answer {n} ({tag})." for n in range(1, 5)}
    # The judge passes t1 and t2, fails t3 and t4.
    for task_id, answer in answers.items():
        script_judgement(model_server, answer, *((4, 4) if task_id in ("t1", "t2") else (0, 0)))
    project = write_project(
        tmp_path_factory.mktemp("calibration"), model_server.base_url, more=FLOOR
    )
    data_dir = tmp_path_factory.mktemp(f"calibration-{backend.name}")
    settings = host_settings(backend, data_dir, project=project)
    document = suite(
        new_suite_id("calibration"),
        [task(t, answer=a, expected=rubric(0.5, 0.5)) for t, a in answers.items()],
        modes=("rubric", "regression"),
    )
    reports = tmp_path_factory.mktemp("calibration-reports")
    with running_host(settings, backend) as host, host.http() as http:
        ref = publish(http, document)
        first = run_eval(host.client(), http, ref)
        passed = {t["taskId"]: t["passed"] for t in first.summary["tasks"]}
        assert passed == {"t1": True, "t2": True, "t3": False, "t4": False}
        # Never calibrated: its failing tasks are shown, and fail nothing.
        assert first.summary["passed"] is True
        assert first.task("t3")["advisory"] == {"judgeId": JUDGE_ID, "gate": True, "labels": 0}
        printed, junit, markdown = reported(host, first.run_id, reports)
        note = f"{UNCALIBRATED} (tasks t1, t2, t3, t4)"
        assert note in printed
        assert f'<skipped message="{UNCALIBRATED}; failed: score 0.00"' in junit
        assert "<failure" not in junit
        assert f"- **Advisory:** {note}" in markdown
        assert note in dashboard(host, first.run_id)

        # People's labels, through the wire: t2 is relabelled (the last word counts).
        for task_id, verdict in (("t1", "pass"), ("t2", "pass"), ("t2", "fail"),
                                 ("t3", "fail"), ("t4", "fail")):  # fmt: skip
            label(http, first.run_id, task_id, verdict)
        report = calibrate(host, "--json")
        # judge P P F F against people P F F F: p_o = 3/4, p_e = 1/2, kappa = 1/2.
        assert report["confusion"] == {
            "bothPass": 1,
            "judgePassHumanFail": 1,
            "judgeFailHumanPass": 0,
            "bothFail": 2,
        }
        assert (report["labels"], report["accuracy"], report["kappa"]) == (4, 0.75, 0.5)
        assert (report["clears"], report["floor"]) == (True, {"kappaMin": 0.5, "minLabels": 4})
        path = f"/ui/evals/{project_id(first.run_id)}/tasks/t2"
        assert report["disagreements"] == [
            {"runId": first.run_id, "taskId": "t2", "judgePassed": True,
             "humanPassed": False, "dashboardPath": path}
        ]  # fmt: skip
        text = calibrate(host)
        assert "labels 4 accuracy 0.75 kappa 0.50" in text
        assert "floor: kappa >= 0.5 over >= 4 labels: clears (it gates)" in text
        assert f"run {first.run_id} task t2 {host.base_url}{path}" in text
        # Labels made after now: none, so no kappa (and the latest calibration no longer clears).
        later = calibrate(host, "--json", "--since", "2999-01-01")
        assert (later["labels"], later["clears"], "kappa" in later) == (0, False, False)
        report = calibrate(host, "--json")
        assert report["clears"] is True

        # Another tenant sees none of these labels, and its runs stay advisory.
        other = calibrate(host, "--json", tenant=TENANT_B)
        assert other["labels"] == 0
        with host.http(TENANT_B) as theirs:
            their_ref = publish(theirs, document)
            theirs_run = run_eval(host.client(TENANT_B), theirs, their_ref)
        assert theirs_run.summary["passed"] is True
        assert theirs_run.task("t3")["advisory"]["labels"] == 0

        # Calibrated: the judge gates, and its failing tasks fail the run.
        second = run_eval(host.client(), http, ref)
        assert second.summary["passed"] is False
        assert all("advisory" not in t for t in second.summary["tasks"])
        printed, junit, markdown = reported(host, second.run_id, reports)
        assert "advisory" not in printed + junit + markdown
        assert '<failure type="failed"' in junit

        # Bad input: an unknown judge, a `since` that is no date-time.
        unknown = http.post("/host/wopeval/judges/no.such.judge/calibrations", json={})
        assert (unknown.status_code, unknown.json()["error"]) == (404, "not_found")
        bad = http.post(f"/host/wopeval/judges/{JUDGE_ID}/calibrations", json={"since": "now"})
        assert (bad.status_code, bad.json()["error"]) == (400, "validation_error")
    calls = judge_calls(model_server, answers["t1"])

    # The same database, the judge's prompt changed: another digest, its calibration void.
    changed = write_project(
        tmp_path_factory.mktemp("calibration-changed"), model_server.base_url,
        prompt_tail=" Be strict.", more=FLOOR,
    )  # fmt: skip
    moved = settings.model_copy(update={"project": changed, "port": free_port()})
    with running_host(moved, backend) as host, host.http() as http:
        third = run_eval(host.client(), http, ref)
        assert judge_calls(model_server, answers["t1"]) == calls + 1  # judged at the new digest
        assert third.summary["passed"] is True
        assert third.task("t3")["advisory"] == {"judgeId": JUDGE_ID, "gate": True, "labels": 0}
        # Its earlier verdicts were another judge's: nothing to pair with the labels.
        assert calibrate(host, "--json")["labels"] == 0
