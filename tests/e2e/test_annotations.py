"""RFC 0056 run annotations on the real host (runs.md §Annotations), through the official client.

Record and list on workflow and eval runs (a task of an eval run is the node an annotation
names), the refusals, tenant isolation, redaction, the live `run.annotated` notification,
and what an annotation never is: an event of the run's log, part of a replay fork, or
left behind by erasure.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import zipfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from openwop_client.types import CreateAnnotationRequest, ForkRunRequest
from openwop_client.wire_id import project_id
from sqlalchemy.exc import OperationalError

from _backends import Backend
from wopeval import recordings
from wopeval.engine.runs.feedback import task_labels
from wopeval.store import AnnotationRow, RunHandle, Store, UnitOfWork
from wopeval.store._annotations import AnnotationsRepo

from ._gate import start_gated_run
from ._server import TENANT_A, TENANT_B, ServerHandle, host_settings, running_host
from ._support import (
    assert_error,
    assert_refused,
    run_to_end,
    store_unchanged,
    table_rows,
    unique,
    wait_terminal,
)
from .evals._evals import new_suite_id, publish, run_eval, suite, task
from .test_dashboard_http import _browser, _sign_in

SECRET = "sk-" + "a1B2c3D4e5F6g7H8i9J0"


def _path(run_id: str) -> str:
    return f"/runs/{project_id(run_id)}/annotations"


def _poll(http: httpx.Client, run_id: str) -> bytes:
    response = http.get(f"/runs/{project_id(run_id)}/events/poll", params={"timeout": 1})
    assert response.status_code == 200, response.text
    return response.content


@pytest.fixture
def a_run(server: ServerHandle) -> str:
    run_id, _ = run_to_end(server.client(TENANT_A), unique("annotated"))
    return run_id


@pytest.fixture
def an_eval_run(server: ServerHandle, http_a: httpx.Client) -> str:
    suite_id = new_suite_id("labelled")
    ref = publish(http_a, suite(suite_id, [task("t-one"), task("t-two", answer="other")]))
    return run_eval(server.client(), http_a, ref).run_id


def test_the_official_client_records_and_lists_annotations_of_an_ended_run(
    server: ServerHandle, http_a: httpx.Client, a_run: str
) -> None:
    client = server.client()
    rated = client.create_annotation(
        a_run, CreateAnnotationRequest(signal={"kind": "rating", "rating": 4}, note="fine")
    )
    flagged = client.create_annotation(a_run, CreateAnnotationRequest(signal={"kind": "flag"}))
    assert rated.target == {"runId": a_run}
    assert rated.signal == {"kind": "rating", "rating": 4}
    assert rated.note == "fine"
    assert rated.actor["principalRef"].startswith("urn:wopeval:api-key:")
    assert rated.annotationId != flagged.annotationId
    listed = client.list_annotations(a_run)
    assert listed == [rated, flagged]
    raw = http_a.get(_path(a_run))
    assert raw.status_code == 200
    assert set(raw.json()) == {"annotations"}
    assert set(raw.json()["annotations"][0]) == {
        "annotationId", "target", "signal", "actor", "note", "createdAt"
    }  # fmt: skip


def test_a_task_of_an_eval_run_is_labelled_pass_or_fail_and_read_back_for_calibration(
    server: ServerHandle, an_eval_run: str
) -> None:
    client = server.client()
    passed = client.create_annotation(
        an_eval_run,
        CreateAnnotationRequest(
            signal={"kind": "label", "label": "pass"}, target={"nodeId": "t-one"}, note="right"
        ),
    )
    client.create_annotation(
        an_eval_run,
        CreateAnnotationRequest(
            signal={"kind": "label", "label": "fail"}, target={"nodeId": "t-two"}
        ),
    )
    # Another signal, or another label, is not what calibration reads.
    client.create_annotation(an_eval_run, CreateAnnotationRequest(signal={"kind": "flag"}))
    client.create_annotation(
        an_eval_run,
        CreateAnnotationRequest(
            signal={"kind": "label", "label": "vague"}, target={"nodeId": "t-one"}
        ),
    )
    assert passed.target == {"runId": an_eval_run, "nodeId": "t-one"}

    labels = asyncio.run(_labels(server.database_url, TENANT_A))
    mine = [(x.node_id, x.label) for x in labels if x.run_id == an_eval_run]
    assert mine == [("t-one", "pass"), ("t-two", "fail")]
    assert not [x for x in asyncio.run(_labels(server.database_url, TENANT_B))
                if x.run_id == an_eval_run]  # fmt: skip
    later = labels[-1].created_at
    assert [x.node_id for x in asyncio.run(_labels(server.database_url, TENANT_A, later))
            if x.run_id == an_eval_run] == ["t-two"]  # fmt: skip


async def _labels(url: str, tenant: str, since: Any = None) -> list[Any]:
    store = await Store.open(url)
    try:
        return await task_labels(store, tenant, since)
    finally:
        await store.close()


def test_an_annotation_is_never_an_event_of_the_run(
    server: ServerHandle, http_a: httpx.Client, a_run: str
) -> None:
    log = _poll(http_a, a_run)
    events = table_rows(server.database_url, "events", run_id=a_run)
    (row,) = table_rows(server.database_url, "runs", run_id=a_run)
    server.client().create_annotation(a_run, CreateAnnotationRequest(signal={"kind": "flag"}))
    assert _poll(http_a, a_run) == log
    assert table_rows(server.database_url, "events", run_id=a_run) == events
    assert table_rows(server.database_url, "runs", run_id=a_run) == [row]
    assert len(table_rows(server.database_url, "annotations", run_id=a_run)) == 1


def test_a_replay_fork_starts_with_no_annotations(server: ServerHandle, a_run: str) -> None:
    client = server.client()
    client.create_annotation(a_run, CreateAnnotationRequest(signal={"kind": "flag"}))
    fork = client.runs_fork(a_run, ForkRunRequest(mode="replay", fromSeq=0))
    wait_terminal(client, fork.runId)
    assert client.list_annotations(fork.runId) == []
    assert len(client.list_annotations(a_run) or []) == 1


def test_erasing_a_run_erases_its_annotations(
    server: ServerHandle, http_a: httpx.Client, a_run: str
) -> None:
    client = server.client()
    client.create_annotation(
        a_run, CreateAnnotationRequest(signal={"kind": "correction", "correction": "x"})
    )
    erased = http_a.post(f"/host/wopeval/runs/{project_id(a_run)}:erase-tool-content")
    assert erased.status_code == 200, erased.text
    assert client.list_annotations(a_run) == []
    assert table_rows(server.database_url, "annotations", run_id=a_run) == []


def test_notes_corrections_and_labels_are_redacted_before_they_are_kept(
    server: ServerHandle, a_run: str
) -> None:
    client = server.client()
    said = f"the agent echoed {SECRET} and Bearer abcdef0123456789"
    for signal in ({"kind": "correction", "correction": said}, {"kind": "label", "label": said}):
        client.create_annotation(a_run, CreateAnnotationRequest(signal=signal, note=said))
    stored = json.dumps(table_rows(server.database_url, "annotations", run_id=a_run), default=str)
    listed = json.dumps([a.__dict__ for a in client.list_annotations(a_run) or []])
    for text in (stored, listed):
        assert SECRET not in text
        assert "abcdef0123456789" not in text
        assert "[redacted]" in text


BAD_BODIES: list[tuple[str, Any]] = [
    ("unknown property", {"signal": {"kind": "flag"}, "score": 1}),
    ("unknown signal property", {"signal": {"kind": "flag", "label": "x"}}),
    ("unknown kind", {"signal": {"kind": "thumbs"}}),
    ("rating out of range", {"signal": {"kind": "rating", "rating": 6}}),
    ("rating not an integer", {"signal": {"kind": "rating", "rating": "5"}}),
    ("rating with a fraction", {"signal": {"kind": "rating", "rating": 4.5}}),
    ("rating a boolean", {"signal": {"kind": "rating", "rating": True}}),
    ("label missing", {"signal": {"kind": "label"}}),
    ("empty label", {"signal": {"kind": "label", "label": ""}}),
    ("no signal", {"note": "hi"}),
    ("note too long", {"signal": {"kind": "flag"}, "note": "n" * 4001}),
    ("unknown target property", {"signal": {"kind": "flag"}, "target": {"taskId": "t-one"}}),
    ("event anchor", {"signal": {"kind": "flag"}, "target": {"eventId": "e" * 20}}),
    ("another run", {"signal": {"kind": "flag"}, "target": {"runId": f"{TENANT_A}/{'0' * 32}"}}),
    ("unknown task", {"signal": {"kind": "flag"}, "target": {"nodeId": "t-nine"}}),
    ("not JSON", "{"),
    # `[redacted]` is longer than `x`: a label at its limit would pass it once redacted.
    ("a label too long once redacted", {"signal": {"kind": "label", "label": "Bearer x " * 28}}),
    ("a note too long once redacted", {"signal": {"kind": "flag"}, "note": "Bearer x " * 444}),
]


@pytest.mark.parametrize(("case", "body"), BAD_BODIES, ids=[case for case, _ in BAD_BODIES])
def test_a_bad_body_is_400_and_writes_nothing(
    server: ServerHandle, http_a: httpx.Client, an_eval_run: str, case: str, body: Any
) -> None:
    content = body if isinstance(body, str) else json.dumps(body)
    headers = {"content-type": "application/json"}
    with store_unchanged(server.database_url):
        response = http_a.post(_path(an_eval_run), content=content, headers=headers)
    assert_error(response, 400, "validation_error")


def test_an_annotation_whose_commit_answer_was_lost_is_replayed_to_the_retry_not_added_twice(
    server: ServerHandle, http_a: httpx.Client, a_run: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The transaction that adds the annotation commits, then its answer is lost (the
    connection cut at that moment): the request answers 503 and the client retries with
    its `Idempotency-Key`. The retry is answered the first request's 201 and the run has
    one annotation, not two: the key's answer was kept in the annotation's transaction."""
    store = server.host.store
    real_transaction = store.transaction
    real_add = AnnotationsRepo.add
    added: list[str] = []
    lost: list[bool] = []

    async def noted_add(repo: AnnotationsRepo, handle: RunHandle, row: AnnotationRow) -> None:
        await real_add(repo, handle, row)
        added.append(row.annotation_id)

    @asynccontextmanager
    async def answer_lost() -> AsyncIterator[UnitOfWork]:
        before = len(added)
        async with real_transaction() as uow:
            yield uow
        if len(added) > before and not lost:
            lost.append(True)
            raise OperationalError("COMMIT", None, ConnectionError("server closed the connection"))

    monkeypatch.setattr(AnnotationsRepo, "add", noted_add)
    monkeypatch.setattr(store, "transaction", answer_lost)
    body = {"signal": {"kind": "flag"}, "note": "looked twice"}
    headers = {"Idempotency-Key": "annotation-" + unique("lost-answer")}
    first = http_a.post(_path(a_run), json=body, headers=headers)
    assert_error(first, 503, "service_unavailable")
    retried = http_a.post(_path(a_run), json=body, headers=headers)
    assert retried.status_code == 201, retried.text
    assert retried.headers["OpenWOP-Idempotent-Replay"] == "true"
    assert retried.json()["annotationId"] == added[0]
    kept = http_a.get(_path(a_run)).json()["annotations"]
    assert [annotation["annotationId"] for annotation in kept] == added


def test_a_node_of_a_workflow_run_must_be_one_of_its_workflow(
    server: ServerHandle, http_a: httpx.Client
) -> None:
    run_id, events = run_to_end(server.client(), unique("nodes"))
    unknown = {"signal": {"kind": "flag"}, "target": {"nodeId": "no-such-node"}}
    with store_unchanged(server.database_url):
        assert_error(http_a.post(_path(run_id), json=unknown), 400, "validation_error")
    node = next(e.nodeId for e in events if e.type == "node.completed")
    known = {"signal": {"kind": "flag"}, "target": {"nodeId": node}}
    answer = http_a.post(_path(run_id), json=known)
    assert answer.status_code == 201, answer.text
    assert answer.json()["target"] == {"runId": run_id, "nodeId": node}


def test_another_tenants_run_is_refused_exactly_as_an_unknown_one(
    server: ServerHandle, http_a: httpx.Client, http_b: httpx.Client, a_run: str
) -> None:
    server.client().create_annotation(a_run, CreateAnnotationRequest(signal={"kind": "flag"}))
    unknown = f"{TENANT_A}/{'0' * 32}"
    body = {"signal": {"kind": "label", "label": "fail"}}
    with store_unchanged(server.database_url):
        for method in ("GET", "POST"):
            kwargs: dict[str, Any] = {"json": body} if method == "POST" else {}
            real = http_b.request(method, _path(a_run), **kwargs)
            made_up = http_b.request(method, _path(unknown), **kwargs)
            assert_error(real, 403, "id_tenant_mismatch")
            assert real.content == made_up.content
    other = server.client(TENANT_B)
    assert_refused(lambda: other.list_annotations(a_run), 403, "id_tenant_mismatch")
    # Within the caller's own tenant, an unknown run is 404.
    own_unknown = f"{TENANT_B}/{'0' * 32}"
    assert_error(http_b.get(_path(own_unknown)), 404, "not_found")
    assert_error(http_b.post(_path(own_unknown), json=body), 404, "not_found")
    assert len(server.client().list_annotations(a_run) or []) == 1


def test_discovery_advertises_the_feedback_family(http_anonymous: httpx.Client) -> None:
    document = http_anonymous.get("/.well-known/openwop").json()
    feedback = document["feedback"]
    assert feedback["targets"] == ["run", "node"]
    assert feedback["signals"] == ["rating", "correction", "label", "flag"]
    assert {"status", "since", "witness"} <= set(feedback)


@pytest.fixture
def no_feedback_host(backend: Backend, tmp_path: Path) -> Iterator[ServerHandle]:
    with running_host(host_settings(backend, tmp_path / "data", feedback=False), backend) as host:
        yield host


def test_a_host_without_feedback_answers_404_and_does_not_advertise_it(
    no_feedback_host: ServerHandle,
) -> None:
    run_id, _ = run_to_end(no_feedback_host.client(), unique("off"))
    with no_feedback_host.http(TENANT_A) as http:
        assert_error(http.post(_path(run_id), json={"signal": {"kind": "flag"}}), 404, "not_found")
        assert_error(http.get(_path(run_id)), 404, "not_found")
        assert "feedback" not in http.get("/.well-known/openwop").json()
        assert "/runs/{runId}/annotations" not in http.get("/openapi.json").json()["paths"]
    assert no_feedback_host.client().list_annotations(run_id) is None


def test_followers_of_an_active_run_are_told_live_and_a_resumed_stream_is_not(
    project_server: ServerHandle, tmp_path: Path
) -> None:
    run = start_gated_run(project_server, tmp_path)
    frames: list[tuple[str | None, str, dict[str, Any]]] = []
    with project_server.http(TENANT_A) as http, http.stream(
        "GET", f"/runs/{project_id(run.run_id)}/events", params={"streamMode": "updates"},
        timeout=60,
    ) as stream:  # fmt: skip
        annotated = False
        frame: dict[str, str] = {}
        for line in stream.iter_lines():
            if line:
                name, _, value = line.partition(": ")
                frame[name] = value
                continue
            if "data" not in frame:
                frame = {}
                continue
            frames.append((frame.get("id"), frame["event"], json.loads(frame["data"])))
            frame = {}
            if not annotated:
                annotated = True
                answer = http.post(_path(run.run_id), json={"signal": {"kind": "flag"}})
                assert answer.status_code == 201, answer.text
                run.release()
            if frames[-1][1] in ("run.completed", "run.failed", "run.cancelled"):
                break
    live = [(i, data) for i, event, data in frames if event == "run.annotated"]
    assert len(live) == 1
    frame_id, data = live[0]
    assert frame_id is None
    assert data["type"] == "run.annotated"
    assert data["payload"] == answer.json()
    events = wait_terminal(project_server.client(), run.run_id)
    assert "run.annotated" not in {e.type for e in events}
    with project_server.http(TENANT_A) as http:
        again = http.get(f"/runs/{project_id(run.run_id)}/events", timeout=60)
    assert "run.annotated" not in again.text


# ── recording bundles ────────────────────────────────────────────────


async def _export(url: str, run_id: str, path: Path) -> None:
    store = await Store.open(url)
    try:
        async with store.reading() as uow:
            origin = recordings.Origin(host="test", tenant=TENANT_A)
            await recordings.export_runs(uow.connection, [run_id], origin, datetime.now(UTC), path)
    finally:
        await store.close()


async def _import(url: str, path: Path, tenant: str) -> None:
    store = await Store.open(url)
    try:
        async with store.transaction() as uow:
            await recordings.import_bundle(uow.connection, recordings.read_bundle(path), tenant)
    finally:
        await store.close()


def _forged(path: Path, target: Path, change: Any) -> Path:
    """The bundle with its annotation rows changed, its checksums made to match again."""
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    manifest = json.loads(members["manifest.json"])
    (run,) = manifest["runs"]
    member = f"runs/{run['id']}/annotations.jsonl"
    rows = [json.loads(line) for line in members[member].splitlines()]
    change(rows[0])
    members[member] = b"".join(json.dumps(row).encode() + b"\n" for row in rows)
    run["files"]["annotations"] = hashlib.sha256(members[member]).hexdigest()
    members["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(target, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return target


def test_annotations_travel_in_a_bundle_under_the_importing_tenant(
    server: ServerHandle, an_eval_run: str, tmp_path: Path
) -> None:
    made = server.client().create_annotation(
        an_eval_run,
        CreateAnnotationRequest(
            signal={"kind": "label", "label": "fail"}, target={"nodeId": "t-two"}, note="wrong"
        ),
    )
    path = tmp_path / "annotated.zip"
    asyncio.run(_export(server.database_url, an_eval_run, path))
    forgeries = {
        "a label the columns do not say": lambda row: row["doc"]["signal"].update(label="pass"),
        "another tenant": lambda row: row.update(tenant=TENANT_B),
        "no annotation document": lambda row: row["doc"].pop("actor"),
    }
    for case, change in forgeries.items():
        forged = _forged(path, tmp_path / f"{len(case)}.zip", change)
        with store_unchanged(server.database_url), pytest.raises(recordings.BundleError):
            asyncio.run(_import(server.database_url, forged, TENANT_B))

    asyncio.run(_import(server.database_url, path, TENANT_B))
    moved = f"{TENANT_B}/{an_eval_run.partition('/')[2]}"
    (carried,) = server.client(TENANT_B).list_annotations(moved) or []
    assert carried.target == {"runId": moved, "nodeId": "t-two"}
    assert (carried.annotationId, carried.signal, carried.note, carried.actor) == (
        made.annotationId, made.signal, made.note, made.actor
    )  # fmt: skip
    labels = asyncio.run(_labels(server.database_url, TENANT_B))
    assert [(x.run_id, x.node_id, x.label) for x in labels] == [(moved, "t-two", "fail")]


# ── the dashboard's label form ───────────────────────────────────────


def test_the_dashboards_label_form_takes_pass_or_fail_on_a_task_and_nothing_else(
    server: ServerHandle, an_eval_run: str
) -> None:
    form = f"/ui/evals/{project_id(an_eval_run)}/tasks/t-one/label"
    with _browser(server) as browser:
        csrf = _sign_in(browser, server, TENANT_A)
        origin = {"Origin": server.base_url}
        refused = [
            ({"label": "pass"}, 403),
            ({"csrf": csrf, "label": "maybe"}, 400),
            ({"csrf": csrf, "label": "pass", "note": "n" * 4001}, 400),
            ({"csrf": csrf, "label": "pass", "note": "a\x00b"}, 400),
        ]
        with store_unchanged(server.database_url):
            for fields, status in refused:
                assert browser.post(form, data=fields, headers=origin).status_code == status
            unknown = form.replace("/t-one/", "/t-nine/")
            answer = browser.post(unknown, data={"csrf": csrf, "label": "pass"}, headers=origin)
            assert answer.status_code == 400
            assert "names no task of this eval run" in answer.text
        done = browser.post(
            form,
            data={"csrf": csrf, "label": "fail", "note": " wrong ", "back": "https://elsewhere/"},
            headers=origin,
        )
        assert done.status_code == 303
        assert done.headers["location"] == "/ui/runs"  # never back to another site
        page = browser.get(f"/ui/evals/{project_id(an_eval_run)}")
        assert 'data-review="fail"' in page.text
    (label,) = server.client().list_annotations(an_eval_run) or []
    assert (label.target, label.signal, label.note) == (
        {"runId": an_eval_run, "nodeId": "t-one"}, {"kind": "label", "label": "fail"}, "wrong"
    )  # fmt: skip
