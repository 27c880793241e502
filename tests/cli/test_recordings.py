"""`wopeval recordings export|import`: runs carried from a production store to a CI store.

A real `wopeval serve` records runs in a "production" store (SQLite or PostgreSQL);
the export reads that store directly; the import loads the bundle into a fresh
SQLite "CI" store under another tenant, where a second `serve` uses the runs as
RFC 0252 fixture sources and an RFC 0251 baseline, and can erase them. A bundle
in the first format (tests/cli/data/) still imports, into either store, and each
tenant's imported copy is its own. (Model exchanges travelling and replaying:
tests/e2e/llm/test_recordings.py; each check of a bundle: tests/engine/test_bundles.py.)
"""

from __future__ import annotations

import json
import secrets
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from openwop_client.wire_id import project_id

from _backends import Backend
from _processes import ServeOptions, ServeProcess

from ._support import run_cli

PROD, CI, OTHER = "prod", "ci", "other"
DEADLINE_SECONDS = 60.0
FORMAT_1_BUNDLE = Path(__file__).parent / "data" / "recordings-format-1.zip"
FORMAT_1_SOURCE = "dae736656df44beb983833e0d21a6ef8"
FORMAT_1_BASELINE = "51d4548c90f84388b9083bac6b4e9791"


@dataclass
class Production:
    options: ServeOptions
    source: str
    """An eval run of `conformance-eval-recorded-source`, tagged `prod`."""
    workflow: str
    """A workflow run, tagged `prod`."""
    baseline: str
    """An eval run of `conformance-eval-regression-base` (tagged `main`)."""

    def store_options(self) -> list[str]:
        return self.options.embedded()


def _wait(http: httpx.Client, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while True:
        snapshot: dict[str, Any] = http.get(f"/runs/{project_id(run_id)}").json()
        if snapshot["status"] in ("completed", "failed", "cancelled"):
            return snapshot
        assert time.monotonic() < deadline, snapshot
        time.sleep(0.05)


def _create(http: httpx.Client, body: dict[str, Any]) -> str:
    created = http.post("/runs", json=body)
    assert created.status_code == 201, created.text
    run_id: str = created.json()["runId"]
    assert _wait(http, run_id)["status"] == "completed"
    return run_id


def _eval(ref: str, agent: str = "conformance.scripted-agent", **fields: Any) -> dict[str, Any]:
    return {"mode": "eval", "evalSuiteRef": ref, "agentId": agent, **fields}


@pytest.fixture(scope="module")
def production(backend: Backend, tmp_path_factory: pytest.TempPathFactory) -> Production:
    data_dir = tmp_path_factory.mktemp(f"production-{backend.name}")
    key = "wop_prod_" + secrets.token_hex(12)
    options = ServeOptions(data_dir, backend.new_database(), (f"{PROD}={key}",))
    serve = ServeProcess(options, data_dir / "serve.log")
    try:
        serve.wait_up()
        with serve.http(key) as http:
            source = _create(
                http, _eval("conformance-eval-recorded-source", tags=["prod", "support"])
            )
            workflow = _create(
                http,
                {
                    "workflowId": "conformance-agent-counter",
                    "inputs": {"calls": [], "answer": "hello <b>"},
                    "tags": ["prod"],
                },
            )
            baseline = _create(http, _eval("conformance-eval-regression-base", tags=["main"]))
    finally:
        serve.stop()
    return Production(options, source, workflow, baseline)


def _export(production: Production, bundle: Path, *args: str) -> Any:
    return run_cli("recordings", "export", *args, "-o", str(bundle), *production.store_options())


def test_runs_travel_to_another_store_and_serve_as_sources_and_baselines_there(
    production: Production, tmp_path: Path
) -> None:
    bundle = tmp_path / "recordings.zip"
    done = _export(production, bundle, "--tag", "prod", "--tenant", PROD,
                   "--baseline", production.baseline)  # fmt: skip
    assert done.code == 0, done.stderr
    assert "exported 3 runs" in done.stdout
    with zipfile.ZipFile(bundle) as archive:
        manifest = json.loads(archive.read("manifest.json"))
    assert manifest["format"] == "wopeval.recordings/3"
    assert manifest["origin"]["tenant"] == PROD
    assert {run["id"] for run in manifest["runs"]} == {
        run_id.partition("/")[2]
        for run_id in (production.source, production.workflow, production.baseline)
    }

    ci_dir = tmp_path / "ci"
    imported = run_cli(
        "recordings", "import", str(bundle), "--tenant", CI, "--data-dir", str(ci_dir)
    )
    assert imported.code == 0, imported.stderr
    as_ci = {run_id: f"{CI}/{run_id.partition('/')[2]}" for run_id in
             (production.source, production.workflow, production.baseline)}  # fmt: skip
    assert all(run_id in imported.stdout for run_id in as_ci.values())

    key = "wop_ci_" + secrets.token_hex(12)
    serve = ServeProcess(ServeOptions(ci_dir, None, (f"{CI}={key}",)), tmp_path / "ci.log")
    try:
        serve.wait_up()
        with serve.http(key) as http:
            workflow = http.get(f"/runs/{project_id(as_ci[production.workflow])}").json()
            assert workflow["status"] == "completed"
            assert workflow["owner"]["tenant"] == CI
            log = http.get(f"/runs/{project_id(as_ci[production.workflow])}/events/poll").json()
            assert log["events"][0]["runId"] == as_ci[production.workflow]
            assert log["events"][0]["payload"]["owner"]["tenant"] == CI

            replay = _create(
                http,
                _eval(
                    "conformance-eval-recorded-replay",
                    fixtureRuns={"record": as_ci[production.source]},
                ),
            )
            summary = http.get(f"/runs/{project_id(replay)}/eval-summary").json()
            assert summary["passed"] is True
            assert summary["fixtureMissCount"] == 0
            live = http.get(f"/host/wopeval/runs/{project_id(replay)}/live-calls").json()
            assert live["liveCalls"] == 0

            candidate = _create(
                http,
                _eval(
                    "conformance-eval-regression-candidate",
                    evalModes=["golden", "regression"],
                    baselineRunId=as_ci[production.baseline],
                ),
            )
            paired = http.get(f"/runs/{project_id(candidate)}/eval-summary").json()
            assert paired["regression"]["baselineRunId"] == as_ci[production.baseline]
            assert paired["regression"]["verdict"] == "unchanged"

            erased = http.post(
                f"/host/wopeval/runs/{project_id(as_ci[production.source])}:erase-tool-content"
            )
            assert erased.status_code == 200, erased.text
    finally:
        serve.stop()

    again = run_cli("recordings", "import", str(bundle), "--tenant", CI, "--data-dir", str(ci_dir))
    assert again.code == 4
    assert "already in this store" in again.stderr


def test_a_tampered_bundle_is_refused_and_nothing_is_imported(
    production: Production, tmp_path: Path
) -> None:
    bundle = tmp_path / "recordings.zip"
    assert _export(production, bundle, production.workflow).code == 0
    tampered = tmp_path / "tampered.zip"
    with zipfile.ZipFile(bundle) as source, zipfile.ZipFile(tampered, "w") as target:
        for item in source.infolist():
            content = source.read(item)
            if item.filename.endswith("/events.jsonl"):
                content = content.replace(b"hello <b>", b"hello <i>")
            target.writestr(item, content)
    refused = run_cli("recordings", "import", str(tampered), "--data-dir", str(tmp_path / "ci"))
    assert refused.code == 4
    assert "does not match its checksum" in refused.stderr
    # Checked before the store is opened: not even its data directory was made.
    assert not (tmp_path / "ci").exists()


def test_a_bundle_of_another_format_is_refused(production: Production, tmp_path: Path) -> None:
    bundle = tmp_path / "recordings.zip"
    assert _export(production, bundle, production.workflow).code == 0
    future = tmp_path / "future.zip"
    with zipfile.ZipFile(bundle) as source, zipfile.ZipFile(future, "w") as target:
        for item in source.infolist():
            content = source.read(item)
            if item.filename == "manifest.json":
                manifest = json.loads(content)
                manifest["format"] = "wopeval.recordings/99"
                content = json.dumps(manifest).encode()
            target.writestr(item, content)
    refused = run_cli("recordings", "import", str(future), "--data-dir", str(tmp_path / "ci"))
    assert refused.code == 4
    assert "wopeval.recordings/99" in refused.stderr


def test_an_erased_run_is_never_exported(production: Production, tmp_path: Path) -> None:
    key = "wop_prod_erase_" + secrets.token_hex(8)
    options = ServeOptions(
        production.options.data_dir,
        production.options.database_url,
        (f"{PROD}={key}",),
    )
    serve = ServeProcess(options, tmp_path / "serve.log")
    try:
        serve.wait_up()
        with serve.http(key) as http:
            run_id = _create(
                http,
                {
                    "workflowId": "conformance-agent-counter",
                    "inputs": {
                        "calls": [
                            {
                                "tool": "conformance.eval:counter",
                                "args": {"op": "inc", "key": "erased-export"},
                            }
                        ],
                        "answer": "done",
                    },
                },
            )
            erased = http.post(f"/host/wopeval/runs/{project_id(run_id)}:erase-tool-content")
            assert erased.status_code == 200, erased.text
    finally:
        serve.stop()
    bundle = tmp_path / "erased.zip"
    refused = _export(production, bundle, run_id)
    assert refused.code == 4
    assert "was erased" in refused.stderr
    assert not bundle.exists()


def _replay_passes(http: httpx.Client, source: str) -> bool:
    replay = _create(
        http, _eval("conformance-eval-recorded-replay", fixtureRuns={"record": source})
    )
    summary = http.get(f"/runs/{project_id(replay)}/eval-summary").json()
    live = http.get(f"/host/wopeval/runs/{project_id(replay)}/live-calls").json()
    return bool(summary["passed"] and summary["fixtureMissCount"] == 0 and live["liveCalls"] == 0)


def test_a_format_1_bundle_imports_and_each_tenant_erases_only_its_own_copy(
    backend: Backend, tmp_path: Path
) -> None:
    keys = (f"{CI}=wop_ci_{secrets.token_hex(12)}", f"{OTHER}=wop_other_{secrets.token_hex(12)}")
    options = ServeOptions(tmp_path / "ci", backend.new_database(), keys)
    for tenant in (CI, OTHER):
        done = run_cli("recordings", "import", str(FORMAT_1_BUNDLE), "--tenant", tenant,
                       *options.embedded())  # fmt: skip
        assert done.code == 0, done.stderr
        assert f"{tenant}/{FORMAT_1_SOURCE}" in done.stdout
    ci_key, other_key = (pair.partition("=")[2] for pair in options.api_keys)
    source = f"{CI}/{FORMAT_1_SOURCE}"
    serve = ServeProcess(options, tmp_path / "serve.log")
    try:
        serve.wait_up()
        with serve.http(ci_key) as ci, serve.http(other_key) as other:
            assert _replay_passes(ci, source)
            baseline = f"{CI}/{FORMAT_1_BASELINE}"
            candidate = _create(ci, _eval("conformance-eval-regression-candidate",
                evalModes=["golden", "regression"], baselineRunId=baseline))  # fmt: skip
            paired = ci.get(f"/runs/{project_id(candidate)}/eval-summary").json()
            assert paired["regression"]["verdict"] == "unchanged"

            # Another tenant neither sees nor sources from CI's copy.
            seen = other.get(f"/runs/{project_id(source)}")
            assert seen.status_code == 403, seen.text
            sourced = other.post("/runs", json=_eval("conformance-eval-recorded-replay",
                                 fixtureRuns={"record": source}))  # fmt: skip
            assert sourced.status_code == 400, sourced.text

            erased = ci.post(f"/host/wopeval/runs/{project_id(source)}:erase-tool-content")
            assert erased.status_code == 200, erased.text
            refused = ci.post("/runs", json=_eval("conformance-eval-recorded-replay",
                              fixtureRuns={"record": source}))  # fmt: skip
            assert refused.status_code == 400, refused.text
            # The erasure reached CI's copy and nothing of the other tenant's.
            assert _replay_passes(other, f"{OTHER}/{FORMAT_1_SOURCE}")
    finally:
        serve.stop()


def _manifest_list_format(members: dict[str, bytes]) -> None:
    members["manifest.json"] = json.dumps({"format": ["wopeval.recordings/2"]}).encode()


def _zip_slip(members: dict[str, bytes]) -> None:
    members["../../outside.jsonl"] = b"{}\n"


def _not_json(members: dict[str, bytes]) -> None:
    members["manifest.json"] = b"{'format':"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_manifest_list_format, "is in format \"['wopeval.recordings/2']\"; this host reads"),
        (_zip_slip, "holds '../../outside.jsonl', which its manifest lacks"),
        (_not_json, "has no readable manifest.json: Expecting property name"),
    ],
    ids=["a format that is a list", "a zip-slip member", "a manifest that is no JSON"],
)
def test_a_hostile_bundle_is_refused_with_a_message_and_exit_4(
    tmp_path: Path, change: Callable[[dict[str, bytes]], None], message: str
) -> None:
    """What the reader refuses, the command says, in one line (never a traceback), before
    the store is opened. Each refusal the reader makes: tests/engine/test_hostile_bundles.py."""
    with zipfile.ZipFile(FORMAT_1_BUNDLE) as source:
        members = {name: source.read(name) for name in source.namelist()}
    change(members)
    hostile = tmp_path / "hostile.zip"
    with zipfile.ZipFile(hostile, "w") as target:
        for name, content in members.items():
            target.writestr(name, content)
    refused = run_cli("recordings", "import", str(hostile), "--data-dir", str(tmp_path / "ci"))
    assert (refused.code, refused.stdout) == (4, "")
    assert refused.stderr.startswith("error: ")
    assert message in refused.stderr
    assert refused.stderr.count("\n") == 1
    assert "Traceback" not in refused.stderr
    assert not (tmp_path / "ci").exists()
